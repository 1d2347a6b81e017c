import { describe, expect, it, onTestFinished } from 'vitest'
import { readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { proofDir, status } from '../proof/harness.js'
import { mirroredDevice, publishNow, startHome, stopHome, type MirrorDevice, type ServiceHome } from './mirror-helpers.js'

const ENV = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }

/**
 * Device a publishes twice; its mirror "nas" copies the first, is down for the second, and comes
 * back holding the older publish. Both homes run; the daemon is stopped.
 */
async function laggingMirror (): Promise<{ d: MirrorDevice, primary: ServiceHome, old: string, latest: string }> {
  const root = await proofDir()
  const primary = await startHome(join(root, 'primary'))
  let mirror = await startHome(join(root, 'mirror'))
  onTestFinished(async () => { await stopHome(mirror); await stopHome(primary) })
  const d = await mirroredDevice(root, 'a', primary, mirror)
  const daemon = new DaemonProcess(['--config', d.config], { env: ENV })
  onTestFinished(async () => { await daemon.stop() })
  await daemon.logged('service ready', 60_000)
  await writeFile(join(d.kept, 'k0.txt'), 'kept 0\n')
  await until(async () => (await status(d)).index.files === 1 ? true : undefined, 30_000, 'k0 indexed')
  const old = await publishNow(d)
  await until(async () => { const m = (await status(d)).mirrors[0]; return m.objectsBehind === 0 && m.lastPublish?.cid === old ? true : undefined }, 120_000, 'the mirror caught up', 100)

  // The mirror goes down; the primary gets a newer publish; the mirror comes back with the old one.
  await stopHome(mirror)
  await writeFile(join(d.kept, 'k1.txt'), 'kept 1\n')
  await until(async () => (await status(d)).index.files === 2 ? true : undefined, 30_000, 'k1 indexed')
  const latest = await publishNow(d)
  await daemon.stop()
  mirror = await startHome(join(root, 'mirror'), mirror.url)
  return { d, primary, old, latest }
}

describe('a restore from a mirror that lags', () => {
  it('is refused, naming its publish and how far behind this device\'s last known pointer it is, unless --allow-older; the fallback too', async () => {
    const { d, primary, old, latest } = await laggingMirror()

    const from = await runCli(['restore', '--from', 'nas', '--force', '--config', d.config], { timeoutMs: 120_000 })
    expect(from.code, from.stdout + from.stderr).toBe(1)
    expect(from.stderr).toContain('ERR_MIRROR_BEHIND')
    expect(from.stderr).toContain(`mirror nas holds ${old}`)
    expect(from.stderr).toContain(`1 publish behind this device's last known pointer ${latest}`)
    expect(from.stderr).toContain('--allow-older')
    expect(from.stdout).not.toContain('restored')

    // The primary down: the fallback finds only the lagging mirror, and refuses it the same way.
    await stopHome(primary)
    const fallback = await runCli(['restore', '--force', '--config', d.config], { timeoutMs: 240_000 })
    expect(fallback.code, fallback.stdout + fallback.stderr).toBe(1)
    expect(fallback.stderr).toContain('the primary failed')
    expect(fallback.stderr).toContain('ERR_MIRROR_BEHIND')
    expect(fallback.stderr).toContain(`1 publish behind this device's last known pointer ${latest}`)

    // Asked for knowingly: installed, and said plainly to be the older one.
    const older = await runCli(['restore', '--force', '--allow-older', '--config', d.config], { timeoutMs: 240_000 })
    expect(older.code, older.stderr).toBe(0)
    expect(older.stdout).toContain(`restored ${old}`)
    expect(older.stdout).toContain('from mirror nas')
    expect(older.stdout).toContain(`mirror nas holds ${old}`)
    expect(older.stdout).toMatch(/1 publish behind this device's last known pointer \S+ \(published [^)]+\): it is an older index, not the latest/)
  }, 600_000)

  it('is refused on a device that has only restored from the primary: the plain restore records the pointer it read', async () => {
    const { d, primary, old, latest } = await laggingMirror()
    // A new state dir (its key and mirror sign-in kept): no publish of its own, no pointer seen.
    for (const name of await readdir(d.state)) if (/^(index|sync)\.sqlite/.test(name)) await rm(join(d.state, name))
    const plain = await runCli(['restore', '--config', d.config], { timeoutMs: 120_000 })
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.stdout).toContain(`restored ${latest}`)

    const from = await runCli(['restore', '--from', 'nas', '--force', '--config', d.config], { timeoutMs: 120_000 })
    expect(from.code, from.stdout + from.stderr).toBe(1)
    expect(from.stderr).toContain('ERR_MIRROR_BEHIND')
    expect(from.stderr).toContain(`mirror nas holds ${old}`)
    expect(from.stderr).toContain(`1 publish behind this device's last known pointer ${latest}`)

    // The drill of the mirror restores, and says it restores the older publish.
    const drill = await runCli(['verify', '--mirror', 'nas', '--config', d.config], { timeoutMs: 120_000 })
    expect(drill.code, drill.stderr).toBe(0)
    expect(drill.stdout).toContain(`mirror nas holds ${old}, 1 publish behind this device's last known pointer ${latest}`)

    await stopHome(primary)
    const fallback = await runCli(['restore', '--force', '--config', d.config], { timeoutMs: 240_000 })
    expect(fallback.code, fallback.stdout + fallback.stderr).toBe(1)
    expect(fallback.stderr).toContain('ERR_MIRROR_BEHIND')
    expect(fallback.stdout).not.toContain('restored')
  }, 600_000)
})
