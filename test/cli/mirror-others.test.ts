import { describe, expect, it, onTestFinished } from 'vitest'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { device, ok, proofDir, shareKey, status } from '../proof/harness.js'
import { holds, mirroredDevice, publishNow, startHome, stopHome, type MirrorDevice } from './mirror-helpers.js'

const ENV = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }

/** Every content object the records of a device's index name, by the device that stored it. */
function contentObjects (state: string): Map<string, string> {
  const db = new Database(join(state, 'index.sqlite'), { readonly: true })
  try {
    const rows = db.prepare('SELECT device_id AS deviceId, objects FROM content').all() as Array<{ deviceId: string, objects: string }>
    return new Map(rows.flatMap(r => (JSON.parse(r.objects) as Array<[string, number, number]>).map(([cid]) => [cid, r.deviceId] as const)))
  } finally {
    db.close()
  }
}

async function mirrorOf (d: MirrorDevice): Promise<Record<string, any>> {
  return (await status(d)).mirrors[0] as Record<string, any>
}

describe('a mirror gets the content every record of the published index names, whichever device stored it', () => {
  it('content stored by a device without the mirror reaches it through the device that has one; "caught up" waits for it; the drill restores every file from the mirror alone', async () => {
    const root = await proofDir()
    const primary = await startHome(join(root, 'primary'))
    const mirror = await startHome(join(root, 'mirror'))
    onTestFinished(async () => { await stopHome(mirror); await stopHome(primary) })
    const b = await mirroredDevice(root, 'b', primary, mirror)
    // Device a: the same account and key, a storing folder, and no mirror configured.
    const a = await device(root, 'a', { remoteUrl: primary.url, extra: '[[folders]]\nname = "other"\npath = "other"\nstore = true\n' })
    for (const f of ['api-key', 'session-token']) await writeFile(join(a.root, f), await readFile(join(b.root, f)), { mode: 0o600 })
    await shareKey(b, a)
    await mkdir(join(a.root, 'other'), { recursive: true })
    // Two publishes of a before b looks: b takes in the second only, yet the mirror needs both for a --full drill.
    await writeFile(join(a.root, 'other', 'from-a.txt'), 'stored by a, which has no mirror\n')
    await ok(['snapshot', '--config', a.config], { timeoutMs: 120_000 })
    await writeFile(join(a.root, 'other', 'from-a-2.txt'), 'stored by a later\n')
    await ok(['snapshot', '--config', a.config], { timeoutMs: 120_000 })
    const fromA = [...contentObjects(a.state).keys()]
    expect(fromA.length).toBeGreaterThan(0)

    await writeFile(join(b.kept, 'from-b.txt'), 'stored by b\n')
    const daemon = new DaemonProcess(['--config', b.config], { env: ENV })
    onTestFinished(async () => { await daemon.stop() })
    await daemon.logged('service ready', 60_000)
    await until(async () => (await status(b)).index.files >= 1 ? true : undefined, 30_000, 'from-b.txt indexed')
    // b's publish merges a's segments: a's records are in the index b publishes.
    const cid = await publishNow(b)
    const records = contentObjects(b.state)
    for (const object of fromA) expect(records.has(object), `b's index names ${object}`).toBe(true)

    // Caught up means the mirror holds every object those records name, a's too.
    await until(async () => { const m = await mirrorOf(b); return m.objectsBehind === 0 && m.publishesBehind === 0 && m.lastPublish?.cid === cid ? true : undefined }, 120_000, 'the mirror caught up', 100)
    for (const object of records.keys()) expect(await holds(mirror, object, root), `mirror holds ${object} (stored by ${records.get(object) ?? '?'})`).toBe(true)
    const text = await runCli(['status', '--config', b.config])
    expect(text.stdout).toContain('mirror nas: caught up')
    const drill = await runCli(['verify', '--mirror', 'nas', '--content', '--config', b.config], { timeoutMs: 120_000 })
    expect(drill.code, drill.stdout + drill.stderr).toBe(0)
    expect(drill.stdout).toContain('3 of 3 stored contents (3 paths) brought back and verified')
    // Every publish of the history is on the mirror: a's two and b's.
    const full = await runCli(['verify', '--mirror', 'nas', '--full', '--config', b.config], { timeoutMs: 120_000 })
    expect(full.code, full.stdout + full.stderr).toBe(0)
    expect(full.stdout).toContain(`mirror nas: restorable: ${cid}; 3 publishes`)
  }, 600_000)
})
