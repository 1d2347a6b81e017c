import { describe, expect, it, onTestFinished } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { loadConfig } from '../../src/config/index.js'
import { findMirror, saveMirrorCredentials } from '../../src/connect/index.js'
import { startLocalService } from '../../src/local-service/index.js'

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

  it('--from a mirror that holds no pointer names that mirror, not the primary\'s pointer service', async () => {
    const dir = await useTempDir()
    const primary = await startLocalService({ dir: join(dir, 'primary') })
    onTestFinished(async () => { await primary.stop() })
    const mirror = await startLocalService({ dir: join(dir, 'mirror') })
    onTestFinished(async () => { await mirror.stop() })
    const config = join(dir, 'c.toml')
    const p = primary.url
    await writeFile(config, `state_dir = "state"\n[service]\nmode = "remote"\ndeal_url = "${p}"\napi_url = "${p}"\npointer_url = "${p}"\nupload_url = "${p}"\ngateways = ["${p}"]\n` +
      `[[mirrors]]\nname = "nas"\nurl = "${mirror.url}"\n`)
    const loaded = loadConfig({ configPath: config, env: {} })
    saveMirrorCredentials(loaded, findMirror(loaded, 'nas'), { sessionToken: mirror.issueToken('me') })
    const empty = await runCli(['restore', '--from', 'nas', '--dry-run', '--config', config])
    expect(empty.code, empty.stderr).toBe(3)
    expect(empty.stderr).toContain(`asked mirror nas at ${mirror.url}: nothing has been copied there yet`)
    expect(empty.stderr).not.toContain(p)
  })
})
