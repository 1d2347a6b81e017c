import { describe, it, expect } from 'vitest'
import { stopWhenFinished } from '../helpers/in-process-daemon.js'
import { chmod, mkdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import { loadConfig } from '../../src/config/index.js'
import { Daemon } from '../../src/daemon/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within } from '../helpers/wait.js'
import { writeTestConfig } from '../helpers/config-file.js'

const running: Daemon[] = []

const mode = async (path: string): Promise<string> => ((await stat(path)).mode & 0o777).toString(8)

describe('the daemon\'s files', () => {
  it.each([['a new state dir', false], ['a state dir left open to others', true]])('keeps %s 0700 and daemon.json 0600', async (_what, existing) => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    if (existing) {
      await mkdir(join(dir, 'state'))
      await chmod(join(dir, 'state'), 0o755)
    }
    await writeTestConfig(dir, { watch: { settle_ms: undefined } }, 'c.toml')
    let log = ''
    const sink = new Writable({ write (chunk: Buffer, _enc, done) { log += chunk.toString(); done() } })
    const daemon = new Daemon({ logger: pino({ level: 'info' }, sink) }, { config: loadConfig({ configPath: join(dir, 'c.toml'), env: {} }) })
    stopWhenFinished(running, daemon)
    await within(daemon.start(), 10_000, 'the daemon to start')
    expect(await mode(join(dir, 'state'))).toBe('700')
    expect(await mode(join(dir, 'state', 'daemon.json'))).toBe('600')
    expect(await mode(join(dir, 'state', 'daemon.lock'))).toBe('600')
    if (existing) expect(log).toContain('"mode":"755","msg":"the state dir was open to others: tightened to 0700"')
    else expect(log).not.toContain('tightened')
  })
})
