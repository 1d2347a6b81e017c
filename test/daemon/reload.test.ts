import { describe, it, expect } from 'vitest'
import { startInProcessDaemon } from '../helpers/in-process-daemon.js'
import { writeFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { Daemon } from '../../src/daemon/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within } from '../helpers/wait.js'


const config = (namespace: string, folders: string[]): string => `state_dir = "state"
namespace = "${namespace}"
${folders.map(f => `[[folders]]\nname = "${f}"\npath = "${f}"\n`).join('')}[status]
listen = "127.0.0.1:0"
[service]
mode = "remote"
deal_url = "http://127.0.0.1:9"
api_url = "http://127.0.0.1:9"
pointer_url = "http://127.0.0.1:9"
upload_url = "http://127.0.0.1:9"
gateways = ["http://127.0.0.1:9"]
`

/** A daemon in this process whose log lines are kept, parsed, for the test to read. */
async function startDaemon (dir: string, text: string): Promise<{ daemon: Daemon, lines: Array<Record<string, unknown>>, file: string }> {
  await mkdir(join(dir, 'photos'), { recursive: true })
  const lines: Array<Record<string, unknown>> = []
  const logger = pino({ level: 'info' }, { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>) } })
  const { daemon, config } = await startInProcessDaemon(dir, '', { text, logger })
  return { daemon, lines, file: config }
}

describe('reload (SIGHUP)', () => {
  it('runs one reload at a time: signals during one fold into a single reload after it, which reads the file as it is then', async () => {
    const dir = await useTempDir()
    const { daemon, lines, file } = await startDaemon(dir, config('zero', ['notes']))
    writeFileSync(file, config('one', ['notes', 'photos']))
    const first = daemon.reload()
    // While the first reload runs: the file changes again and three more signals come.
    writeFileSync(file, config('two', ['notes', 'photos']))
    const more = [daemon.reload(), daemon.reload(), daemon.reload()]
    await within(Promise.all([first, ...more]), 10_000, 'the reloads')
    const reloads = lines.filter(l => typeof l.msg === 'string' && l.msg.startsWith('reloaded'))
    expect(reloads).toEqual([
      expect.objectContaining({ added: ['photos'], removed: [] }),
      expect.objectContaining({ added: [], removed: [] })
    ])
    expect(daemon.status()).toMatchObject({ namespace: 'two', folders: [{ name: 'notes' }, { name: 'photos' }] })
  })

  it('refuses a config that does not validate and applies none of it, naming the file', async () => {
    const dir = await useTempDir()
    const { daemon, lines, file } = await startDaemon(dir, config('zero', ['notes']))
    writeFileSync(file, `${config('changed', ['photos'])}log_level = "debug"\n[snapshot]\nencryption = "rot13"\n`)
    await within(daemon.reload(), 10_000, 'the reload')
    expect(lines.find(l => l.msg === 'reload refused: the config no longer validates; the running one is kept')).toMatchObject({ level: 50, config: file })
    expect(daemon.status()).toMatchObject({ namespace: 'zero', folders: [{ name: 'notes' }] })
    expect(daemon.log.level).toBe('info')
    // The line says what is wrong with the file, with no stack trace to bury it.
    const refusal = lines.find(l => l.msg === 'reload refused: the config no longer validates; the running one is kept') ?? {}
    expect(refusal).not.toHaveProperty('err')
    expect(refusal).toMatchObject({ code: 'ERR_CONFIG', problem: expect.stringContaining('snapshot.encryption = "rot13"') })
    // Status says so until a reload goes through.
    expect(daemon.status().reload).toMatchObject({ ok: false, config: file, refused: expect.stringContaining('rot13') })
    writeFileSync(file, config('zero', ['notes']))
    await within(daemon.reload(), 10_000, 'the second reload')
    expect(daemon.status().reload).toMatchObject({ ok: true, refused: null })
  })

  it('never rejects: a signal that comes while stopping, or after, is logged and ignored', async () => {
    const dir = await useTempDir()
    const { daemon, lines, file } = await startDaemon(dir, config('zero', ['notes']))
    writeFileSync(file, config('zero', ['photos']))
    const stopping = daemon.stop()
    await expect(daemon.reload()).resolves.toBeUndefined()
    await stopping
    await expect(daemon.reload()).resolves.toBeUndefined()
    expect(lines.filter(l => l.msg === 'reload ignored: the daemon is stopping')).toHaveLength(2)
  })
})
