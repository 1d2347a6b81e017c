import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync snapshot with no daemon, a mirror configured', { timeout: 120_000 }, () => {
  it('publishes, and says the mirror gets the publish only from the next daemon', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'alpha')
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n[[mirrors]]\nname = "usb"\npath = "usb"\n')
    // Seen: a user published before unplugging the disk, and the disk held the publish before.
    const run = await runCli(['snapshot', '--config', config], { timeoutMs: 90_000 })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stderr).toContain('cidsync: mirror usb gets this publish from the next `cidsync daemon`: only a daemon copies to mirrors')
    const json = await runCli(['snapshot', '--json', '--config', config], { timeoutMs: 90_000 })
    expect(JSON.parse(json.stdout)).toMatchObject({ mirrorsWaiting: ['usb'] })
  })
})
