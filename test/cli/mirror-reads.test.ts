import { describe, expect, it } from 'vitest'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { flipStoredBlock, hideStoredBlock } from '../helpers/service-blocks.js'
import { until } from '../helpers/wait.js'
import { HttpClient } from '../../src/remote/index.js'
import { PointersClient } from '../../src/remote/index.js'
import { device, ok, post, proofDir, shareKey, status, statusOf } from '../proof/harness.js'
import { httpGet } from '../helpers/http.js'
import { MIRROR_EXTRA, mirroredDevice, publishNow, startHome, stopHome, type MirrorDevice, type ServiceHome } from './mirror-helpers.js'

const ENV = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }

async function mirrorOf (d: MirrorDevice): Promise<Record<string, any>> {
  return (await status(d)).mirrors[0] as Record<string, any>
}

/** A device whose two publishes are on the primary and the mirror; the daemon left running. */
async function published (root: string, more = ''): Promise<{ d: MirrorDevice, primary: ServiceHome, mirror: ServiceHome, daemon: DaemonProcess, cids: string[] }> {
  const primary = await startHome(join(root, 'primary'))
  const mirror = await startHome(join(root, 'mirror'))
  const d = await mirroredDevice(root, 'a', primary, mirror, more)
  const daemon = new DaemonProcess(['--config', d.config], { env: ENV })
  await daemon.logged('service ready', 60_000)
  const cids: string[] = []
  for (let i = 0; i < 2; i++) {
    await writeFile(join(d.kept, `k${i}.txt`), `kept ${i}\n`)
    await writeFile(join(d.folder, `n${i}.txt`), `note ${i}\n`)
    await until(async () => (await status(d)).index.files === 2 * (i + 1) ? true : undefined, 30_000, 'files indexed')
    cids.push(await publishNow(d))
  }
  await until(async () => { const m = await mirrorOf(d); return m.objectsBehind === 0 && m.lastPublish?.cid === cids[1] ? true : undefined }, 120_000, 'the mirror caught up', 100)
  return { d, primary, mirror, daemon, cids }
}

/** The mirror's pointer client, signed in as the device (its saved session token). */
async function mirrorPointers (d: MirrorDevice, mirror: ServiceHome): Promise<PointersClient> {
  const token = (await readFile(join(d.state, 'mirrors', 'nas', 'session-token'), 'utf8')).trim()
  return new PointersClient(new HttpClient({ service: 'mirror pointer', baseUrl: mirror.url, credential: () => token }))
}

/** The segments the publish of `manifest` uploaded (its job's files but the manifest). */
function newSegments (d: MirrorDevice, manifest: string): string[] {
  const db = new Database(join(d.state, 'sync.sqlite'), { readonly: true })
  try {
    const files = JSON.parse(db.prepare('SELECT files FROM publish_jobs WHERE snapshot_cid = ?').pluck().get(manifest) as string) as Array<{ cid: string }>
    return files.map(f => f.cid).filter(c => c !== manifest)
  } finally {
    db.close()
  }
}

function segmentsOf (d: MirrorDevice): string[] {
  const db = new Database(join(d.state, 'sync.sqlite'), { readonly: true })
  try {
    return db.prepare("SELECT cid FROM replica_log WHERE kind = 'object' ORDER BY seq").pluck().all() as string[]
  } finally {
    db.close()
  }
}

describe('reading from a mirror, and the exit drill against it alone', () => {
  it('verify --mirror passes on a good mirror and fails, named, on one missing an object or serving a forged one; status shows the drill', async () => {
    const root = await proofDir()
    const { d, mirror, daemon, cids } = await published(root)
    const good = await runCli(['verify', '--mirror', 'nas', '--config', d.config], { timeoutMs: 120_000 })
    expect(good.code, good.stderr).toBe(0)
    expect(good.stdout).toContain(`mirror nas: restorable: ${cids[1] as string}`)
    expect((await mirrorOf(d)).restorable).toMatchObject({ ok: true, cid: cids[1] })
    // --full walks the whole history on the mirror: both publishes, not the newest alone.
    const full = await runCli(['verify', '--mirror', 'nas', '--full', '--config', d.config], { timeoutMs: 120_000 })
    expect(full.code, full.stderr).toBe(0)
    expect(full.stdout).toContain(`mirror nas: restorable: ${cids[1] as string}; 2 publishes`)

    // The newest manifest names every segment a restore needs: one of them gone from the mirror.
    const manifest = cids[1] as string
    const segment = newSegments(d, manifest)[0] as string
    expect(segment).toBeDefined()
    const putBack = hideStoredBlock(mirror.dir, segment)
    const missing = await runCli(['verify', '--mirror', 'nas', '--config', d.config], { timeoutMs: 120_000 })
    expect(missing.code, missing.stdout + missing.stderr).not.toBe(0)
    expect(missing.stderr).toContain('mirror nas')
    expect(missing.stdout).toContain('mirror nas: NOT restorable')
    expect(missing.stderr + missing.stdout).toContain(segment)
    putBack()

    // Forged: the mirror serves other bytes for the manifest.
    flipStoredBlock(mirror.dir, manifest)
    const forged = await runCli(['verify', '--mirror', 'nas', '--config', d.config], { timeoutMs: 120_000 })
    expect(forged.code).toBe(4)
    expect(forged.stderr).toContain('mirror nas')
    expect(forged.stderr).toContain(manifest)
    const s = await mirrorOf(d)
    expect(s.restorable.ok).toBe(false)
    const check = await runCli(['status', '--check', '--config', d.config])
    expect(check.code).not.toBe(0)
    expect(check.stdout + check.stderr).toContain('mirror nas: NOT restorable')
    flipStoredBlock(mirror.dir, manifest)

    // An unknown mirror is a usage error.
    const unknown = await runCli(['verify', '--mirror', 'nope', '--config', d.config])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('ERR_MIRROR_UNKNOWN')
    await daemon.stop()
  }, 600_000)

  it('restore --from reads the mirror alone; a restore whose primary is down falls back to the mirror and says so; get --from too', async () => {
    const root = await proofDir()
    const { d, primary, mirror, daemon, cids } = await published(root)
    await daemon.stop()
    // A new device with the key and the same config, its own state.
    const fresh = await device(root, 'b', { remoteUrl: primary.url, extra: MIRROR_EXTRA(mirror.url) })
    for (const f of ['api-key', 'session-token']) await writeFile(join(fresh.root, f), await readFile(join(d.root, f)), { mode: 0o600 })
    await shareKey(d, fresh)
    const copyMirrorLogin = async (): Promise<void> => {
      await rm(join(fresh.state, 'mirrors'), { recursive: true, force: true })
      await ok(['login', '--config', fresh.config, '--mirror', 'nas', '--wallet-key-file', join(d.root, 'mirror-wallet'), '--session-token-file', join(d.root, 'mirror-token')])
    }
    await copyMirrorLogin()

    const from = await runCli(['restore', '--from', 'nas', '--config', fresh.config], { timeoutMs: 120_000 })
    expect(from.code, from.stderr).toBe(0)
    expect(from.stdout).toContain(`restored ${cids[1] as string}`)
    expect(from.stdout).toContain('from mirror nas')
    const got = await runCli(['get', 'kept/k1.txt', '--from', 'nas', '--to', join(root, 'got'), '--config', fresh.config], { timeoutMs: 120_000 })
    expect(got.code, got.stderr).toBe(0)
    expect(await readFile(join(root, 'got', 'kept', 'k1.txt'), 'utf8')).toBe('kept 1\n')

    // The primary gone: the restore says so and reads the mirror.
    await stopHome(primary)
    const fallback = await runCli(['restore', '--force', '--config', fresh.config], { timeoutMs: 240_000 })
    expect(fallback.code, fallback.stderr).toBe(0)
    expect(fallback.stderr).toContain('the primary failed')
    expect(fallback.stderr).toContain('read from mirror nas')
    expect(fallback.stdout).toContain(`restored ${cids[1] as string}`)
    // And the files: every one failing on the primary, they are read from the mirror.
    const files = await runCli(['restore', '--files', 'kept', '--to', join(root, 'files'), '--config', fresh.config], { timeoutMs: 240_000 })
    expect(files.code, files.stderr).toBe(0)
    expect(files.stderr).toContain('the primary failed')
    expect(files.stderr).toContain('read from mirror nas')
    expect(await readFile(join(root, 'files', 'kept', 'k0.txt'), 'utf8')).toBe('kept 0\n')
    expect(await readFile(join(root, 'files', 'kept', 'k1.txt'), 'utf8')).toBe('kept 1\n')
    // `get` as well, without --from: a newcomer runs it as restore --files' one-file form.
    const one = await runCli(['get', 'kept/k1.txt', '--to', join(root, 'one'), '--config', fresh.config], { timeoutMs: 240_000 })
    expect(one.code, one.stderr).toBe(0)
    expect(one.stderr).toContain('read from mirror nas')
    expect(await readFile(join(root, 'one', 'kept', 'k1.txt'), 'utf8')).toBe('kept 1\n')

    // Commands that read only the primary fail, and say which commands read the mirrors.
    for (const command of [['verify'], ['history']]) {
      const down = await runCli([...command, '--config', fresh.config], { timeoutMs: 240_000 })
      expect(down.code, down.stderr).toBe(1)
      expect(down.stderr).toContain('the primary service did not answer; the mirrors (nas) hold a copy: `cidsync verify --mirror NAME` checks one')
    }

    // Both gone: one error naming each.
    await stopHome(mirror)
    const none = await runCli(['restore', '--force', '--config', fresh.config], { timeoutMs: 240_000 })
    expect(none.code).toBe(1)
    expect(none.stderr).toContain('ERR_MIRRORS_FAILED')
    expect(none.stderr).toContain('mirror nas:')
    // Read from one mirror alone: its failure names it.
    const gone = await runCli(['get', 'kept/k1.txt', '--from', 'nas', '--to', join(root, 'gone'), '--config', fresh.config], { timeoutMs: 120_000 })
    expect(gone.code).toBe(1)
    expect(gone.stderr).toMatch(/not brought back from mirror nas|mirror nas: /)
  }, 600_000)

  it('a mirror pointer set back is moved forward and reported; one ahead of this device is reported and left alone', async () => {
    const root = await proofDir()
    const { d, mirror, daemon, cids } = await published(root)
    const pointers = await mirrorPointers(d, mirror)
    const at = { engine: 'cidsync-sqlite/2', namespace: 'default', network: 'mainnet' }
    await pointers.put({ snapshotCid: cids[0] as string, ...at })
    const back = await until(async () => { const m = await mirrorOf(d); return m.pointer?.state === 'rolled-back' ? m : undefined }, 60_000, 'the rollback reported')
    expect(back.pointer.code).toBe('ERR_MIRROR_POINTER_ROLLED_BACK')
    await until(async () => (await pointers.current('default', 'mainnet')).snapshotCid === cids[1] ? true : undefined, 60_000, 'moved forward again')

    // Ahead: a publish this device does not know (another device's, or forged) is not overwritten.
    const stranger = segmentsOf(d)[0] as string
    await pointers.put({ snapshotCid: stranger, ...at })
    const ahead = await until(async () => { const m = await mirrorOf(d); return m.pointer?.state === 'ahead' ? m : undefined }, 60_000, 'the pointer ahead reported')
    expect(ahead.pointer.message).toContain(stranger)
    expect((await pointers.current('default', 'mainnet')).snapshotCid).toBe(stranger)
    const text = await runCli(['status', '--config', d.config])
    expect(text.stdout).toContain('mirror nas: pointer ahead')
    const check = await runCli(['status', '--check', '--config', d.config])
    expect(check.code).not.toBe(0)
    expect(check.stdout + check.stderr).toContain('ERR_MIRROR_POINTER_AHEAD')
    await daemon.stop()
  }, 600_000)

  it('the daemon\'s drill (POST /verify, the [verify] schedule) drills the mirror alone too; status --check fails once a mirror lags past max_lag_seconds', async () => {
    const root = await proofDir()
    const { d, mirror, daemon, cids } = await published(root, 'max_lag_seconds = 1\n')
    expect((await post(d, '/verify')).status).toBe(200)
    const drilled = await until(async () => { const m = await mirrorOf(d); return m.restorable !== null ? m : undefined }, 60_000, 'the mirror drilled')
    expect(drilled.restorable).toMatchObject({ ok: true, cid: cids[1] })
    const { port, token } = await statusOf(d)
    const metrics = await httpGet({ port }, '/metrics', { headers: { authorization: `Bearer ${token}` } })
    expect(metrics.body).toContain('cidsync_mirror_restorable{mirror="nas"} 1')
    expect(metrics.body).toMatch(/cidsync_mirror_verify_last_success_timestamp_seconds\{mirror="nas"\} \d+/)
    expect((await runCli(['status', '--check', '--config', d.config])).code).toBe(0)

    await stopHome(mirror)
    await writeFile(join(d.kept, 'late.txt'), 'late\n')
    await until(async () => (await status(d)).index.files === 5 ? true : undefined, 30_000, 'late.txt indexed')
    await publishNow(d)
    const check = await until(async () => { const r = await runCli(['status', '--check', '--config', d.config]); return r.code !== 0 && (r.stdout + r.stderr).includes('does not answer') ? r : undefined }, 60_000, '--check failing on the lag, with the error', 500)
    expect(check.stdout + check.stderr).toMatch(/mirror nas: \d+ objects? and \d+ publish(es)? behind for \d+ s, past max_lag_seconds \(1\)/)
    expect(check.stdout + check.stderr).toContain('the mirror does not answer')
    await daemon.stop()
  }, 600_000)
})
