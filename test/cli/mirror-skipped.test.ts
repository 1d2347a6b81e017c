import { describe, expect, it, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { hideStoredBlock } from '../helpers/service-blocks.js'
import { until } from '../helpers/wait.js'
import { proofDir, status, statusOf } from '../proof/harness.js'
import { httpGet } from '../helpers/http.js'
import { holds, mirroredDevice, publishNow, startHome, stopHome, type MirrorDevice } from './mirror-helpers.js'

const ENV = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '300', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }

function contentObjects (d: MirrorDevice): string[] {
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true })
  try {
    return (db.prepare('SELECT objects FROM content').pluck().all() as string[]).flatMap(o => (JSON.parse(o) as Array<[string, number, number]>).map(([cid]) => cid))
  } finally {
    db.close()
  }
}

/**
 * Whether the daemon logged, at or after `since`, the copy loop failing on `cid` because the
 * primary's gateways would not give it, or skipping it.
 */
function refusedSince (daemon: DaemonProcess, cid: string, since: number): true | undefined {
  for (const line of daemon.stderr.split('\n')) {
    if (!line.startsWith('{')) continue
    const event = JSON.parse(line) as { time?: number, msg?: string, err?: string, cid?: string }
    if ((event.time ?? 0) < since) continue
    if (event.msg === 'mirror: copy failed; tried again later' && event.err?.includes(`no gateway has ${cid}`) === true) return true
    if (event.msg === 'mirror: an object the primary no longer gives was skipped' && event.cid === cid) return true
  }
  return undefined
}

async function mirrorOf (d: MirrorDevice): Promise<Record<string, any>> {
  return (await status(d)).mirrors[0] as Record<string, any>
}

describe('an object the primary would not give, skipped for a mirror', () => {
  it('stays missing in status across a restart (never "caught up"), and is copied once the primary gives it again', async () => {
    const root = await proofDir()
    const primary = await startHome(join(root, 'primary'))
    let mirror = await startHome(join(root, 'mirror'))
    onTestFinished(async () => { await stopHome(mirror); await stopHome(primary) })
    const d = await mirroredDevice(root, 'a', primary, mirror)
    let daemon = new DaemonProcess(['--config', d.config], { env: ENV })
    onTestFinished(async () => { await daemon.stop() })
    await daemon.logged('service ready', 60_000)
    // Stored and published while the mirror is down; then the primary loses the file's object.
    await stopHome(mirror)
    await writeFile(join(d.kept, 'lost.txt'), 'the primary will not give this back\n')
    await until(async () => (await status(d)).index.files === 1 ? true : undefined, 30_000, 'lost.txt indexed')
    const cid = await publishNow(d)
    const object = contentObjects(d)[0] as string
    expect(object).toBeDefined()
    const hiddenAt = Date.now()
    const putBack = hideStoredBlock(primary.dir, object)
    // The copy loop ran while the mirror was down: a copy whose fetch from the primary came before
    // the hiding holds the object's bytes while its upload retries, and on a busy machine those
    // retries outlast the mirror's restart, so the mirror rightly got it. The mirror comes back
    // only once the primary has refused the object since the hiding: the loop copies one row at
    // a time, so no copy fetched before it is still under way.
    await until(() => refusedSince(daemon, object, hiddenAt), 60_000, 'the primary refusing the hidden object to the copy loop', 100)
    mirror = await startHome(join(root, 'mirror'), mirror.url)

    let seen: unknown
    const skipped = await until(async () => { const m = await mirrorOf(d); seen = m; return m.objectsBehind === 0 && m.lastPublish?.cid === cid && m.unavailable.count === 1 ? m : undefined }, 120_000, 'the object skipped, the rest copied', 100)
      .catch((err: Error) => { throw new Error(`${err.message}; the mirror as status last showed it: ${JSON.stringify(seen)}`) })
    expect(skipped.unavailable.last.cid).toBe(object)
    let text = await runCli(['status', '--config', d.config])
    expect(text.stdout).not.toContain('mirror nas: caught up')
    expect(text.stdout).toContain('mirror nas: copied all it could, 1 object missing')
    const { port, token } = await statusOf(d)
    const metrics = await httpGet({ port }, '/metrics', { headers: { authorization: `Bearer ${token}` } })
    expect(metrics.body).toContain('cidsync_mirror_objects_missing{mirror="nas"} 1')

    // A restart does not forget it; with no daemon, status shows what the state dir recorded.
    await daemon.stop()
    const offline = await runCli(['status', '--config', d.config])
    expect(offline.stdout).toContain('mirrors, as the state dir recorded them (not checked now')
    expect(offline.stdout).toContain('  mirror nas: copied all it could, 1 object missing')
    expect(offline.stdout).toContain(`  mirror nas: 1 object the primary would not give are missing there (last ${object}`)
    expect(offline.stdout).toMatch(/ {2}mirror nas: restorable: not checked yet/)
    daemon = new DaemonProcess(['--config', d.config], { env: ENV })
    await daemon.logged('service ready', 60_000)
    expect((await mirrorOf(d)).unavailable.count).toBe(1)
    text = await runCli(['status', '--config', d.config])
    expect(text.stdout).not.toContain('mirror nas: caught up')

    // The primary gives it again: tried again, copied, no longer missing.
    putBack()
    await until(async () => (await mirrorOf(d)).unavailable.count === 0 ? true : undefined, 120_000, 'the skipped object copied', 200)
    expect(await holds(mirror, object, root)).toBe(true)
    text = await runCli(['status', '--config', d.config])
    expect(text.stdout).toContain('mirror nas: caught up')
  }, 600_000)
})
