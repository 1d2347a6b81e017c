import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('cidsync restore', () => {
  it('while the daemon runs: refused, saying to stop the daemon and run restore again (not to give it another state dir)', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'a')
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n')
    const daemon = new DaemonProcess(['--config', config])
    await daemon.logged('index current')
    const refused = await runCli(['restore', '--config', config])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain(`another cidsync daemon holds ${join(dir, 'state', 'daemon.lock')} (pid ${daemon.child.pid ?? ''} on`)
    expect(refused.stderr).toContain('restore replaces the index that daemon writes: stop it (`systemctl --user stop cidsync`, `sudo systemctl stop cidsync` for the system service, or Ctrl-C where it runs in a terminal), then run restore again')
    expect(refused.stderr).not.toContain('its own state_dir')
    expect(refused.stderr).toContain('[ERR_LOCK_HELD]')
    expect((await daemon.stop()).code).toBe(0)
  })
})
