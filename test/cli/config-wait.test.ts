import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { CONFIG_RECHECK_MS } from '../../src/cli/config-wait.js'

const GOOD = 'state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n'
const BAD = GOOD.replace('[status]', '[snapshot]\nencryption = "rot13"\n[status]')

describe('cidsync daemon with a bad config', () => {
  it('exits 2 at once, for systemd (RestartPreventExitStatus=2) and a terminal', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'c.toml'), BAD)
    const daemon = new DaemonProcess(['--config', join(dir, 'c.toml')])
    const { code } = await until(() => daemon.ended, 15_000, 'the daemon to exit')
    expect(code).toBe(2)
    expect(daemon.stderr).toContain('snapshot.encryption = "rot13"')
  })

  it('under launchd, says so once and waits for the file to change instead of exiting into a restart loop', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const config = join(dir, 'c.toml')
    await writeFile(config, BAD)
    const daemon = new DaemonProcess(['--config', config], { env: { ...process.env, CIDSYNC_SUPERVISOR: 'launchd' } })
    await until(() => daemon.stderr.includes(`waiting for ${config} to change`) || undefined, 15_000, 'the waiting line')
    expect(daemon.stderr).toContain('snapshot.encryption = "rot13"')
    expect(daemon.child.exitCode).toBeNull()
    await writeFile(config, GOOD)
    await daemon.logged('daemon started')
    expect(daemon.stderr.match(/waiting for/g)).toHaveLength(1)
    expect((await daemon.stop()).code).toBe(0)
  })

  it('under launchd, never starts on a config that reads empty while it is being saved', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    const config = join(dir, 'c.toml')
    await writeFile(config, BAD)
    const daemon = new DaemonProcess(['--config', config], { env: { ...process.env, CIDSYNC_SUPERVISOR: 'launchd', HOME: dir, XDG_STATE_HOME: join(dir, 'xdg') } })
    await until(() => daemon.stderr.includes(`waiting for ${config} to change`) || undefined, 15_000, 'the waiting line')
    // Truncated, as a save that rewrites in place leaves it for a moment: all defaults if loaded.
    await writeFile(config, '')
    // Past the daemon's next look at the file. Only what must not happen is waited out by time.
    await new Promise(resolve => setTimeout(resolve, CONFIG_RECHECK_MS + 1_000))
    expect(daemon.stderr).not.toContain('daemon started')
    await writeFile(config, GOOD)
    const started = await daemon.logged('daemon started')
    expect(started.stateDir).toBe(join(dir, 'state'))
    expect((await daemon.stop()).code).toBe(0)
  })

  it('under launchd, stops cleanly on SIGTERM while waiting', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'c.toml'), BAD)
    const daemon = new DaemonProcess(['--config', join(dir, 'c.toml')], { env: { ...process.env, CIDSYNC_SUPERVISOR: 'launchd' } })
    await until(() => daemon.stderr.includes('waiting for') || undefined, 15_000, 'the waiting line')
    expect((await daemon.stop()).code).toBe(0)
  })
})
