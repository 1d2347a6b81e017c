import { describe, expect, it, onTestFinished } from 'vitest'
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CLI, DaemonProcess, runCli } from '../helpers/cli.js'
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

describe('cidsync restore on a state dir it cannot write', () => {
  it.runIf(spawnSync('prlimit', ['--version']).status === 0)('says this machine could not write (ERR_STATE_WRITE, exit 1), not that the snapshot is damaged (exit 4); the index in place is kept', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    for (let i = 0; i < 4000; i++) await writeFile(join(dir, 'notes', `note-${i}-${'x'.repeat(40)}.md`), String(i))
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n')
    const published = await runCli(['snapshot', '--config', config], { timeoutMs: 60_000 })
    expect(published.code, published.stderr).toBe(0)
    const index = join(dir, 'state', 'index.sqlite')
    const before = readFileSync(index)
    // The inflated base is the largest file a restore writes: a limit below its size cuts it (EFBIG).
    const limit = Math.floor(before.byteLength / 2)
    const cut = spawnSync('prlimit', [`--fsize=${limit}`, process.execPath, CLI, 'restore', '--force', '--config', config], { encoding: 'utf8', timeout: 60_000 })
    expect(cut.status, cut.stderr).toBe(1)
    expect(cut.stderr).toContain(`writing in the state dir ${join(dir, 'state')} failed (EFBIG)`)
    expect(cut.stderr).toContain('[ERR_STATE_WRITE]')
    expect(cut.stderr).not.toContain('damaged')
    expect(readFileSync(index).equals(before)).toBe(true)
    expect(readdirSync(join(dir, 'state')).filter(f => f.includes('.restoring') || f.includes('.unseal'))).toEqual([])

  })
})
