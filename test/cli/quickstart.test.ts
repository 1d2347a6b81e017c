import { describe, expect, it } from 'vitest'
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

const REPO = new URL('../../', import.meta.url)

describe('the quick start', () => {
  it('stores demo/ as the README says: a snapshot through the running daemon, then `get` brings a file back, verified', async () => {
    // The repo's own quick-start config and demo folder, laid out as in a clone, on a port of its own.
    const dir = await useTempDir()
    await mkdir(join(dir, 'config'))
    const config = join(dir, 'config', 'quickstart.toml')
    const text = await readFile(new URL('config/quickstart.toml', REPO), 'utf8')
    expect(text).toMatch(/^store = true$/m)
    await writeFile(config, text.replace('listen = "127.0.0.1:7346"', 'listen = "127.0.0.1:0"'))
    await cp(new URL('demo', REPO), join(dir, 'demo'), { recursive: true })
    const welcome = await readFile(join(dir, 'demo', 'welcome.md'))

    const daemon = new DaemonProcess(['--config', config])
    await daemon.logged('index current', 60_000)
    const snapshot = await runCli(['snapshot', '--config', config], { timeoutMs: 120_000 })
    expect(snapshot.stderr).not.toMatch(/ERR_|not stored/)
    expect(snapshot.code).toBe(0)

    const got = await runCli(['get', 'demo/welcome.md', '--to', join(dir, 'back'), '--config', config], { timeoutMs: 120_000 })
    expect(got.stderr).toBe('')
    expect(got.code).toBe(0)
    expect((await readFile(join(dir, 'back', 'demo', 'welcome.md'))).equals(welcome)).toBe(true)
    expect((await daemon.stop()).code).toBe(0)
  }, 240_000)
})
