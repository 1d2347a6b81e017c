import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { statusProblems } from '../../src/cli/status-check.js'
import { until } from '../helpers/wait.js'
import { flipStoredBlock } from '../helpers/service-blocks.js'


describe('the restore drill in the daemon', () => {
  it('runs on POST /verify: restorable in status, history and metrics; a damaged stored segment turns it to no, naming it', async () => {
    const dir = await useTempDir()
    const { port, token, notes } = await startInProcessDaemon(dir, { snapshot: { quiet_seconds: 3600, min_interval_seconds: 3600 } })
    await writeFile(join(notes, 'a.md'), 'alpha')
    await until(async () => (await statusOf(port)).index.files === 1 || undefined, 20_000, 'a.md indexed')
    const before = await untilReached(port)
    expect(before.restorable).toBeNull()
    expect((await httpGet({ port }, '/metrics')).body).not.toMatch(/^cidsync_restorable /m)

    const post = async (path: string): Promise<{ status: number, body: string }> => await httpGet({ port }, path, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    const published = JSON.parse((await post('/snapshot')).body) as { cid: string }
    const drill = await post('/verify')
    expect(drill.status).toBe(200)
    expect(JSON.parse(drill.body)).toMatchObject({ restorable: true, cid: published.cid, failed: null, own: { compared: 1, differing: 0 } })
    const ok = await statusOf(port)
    expect(ok.restorable).toMatchObject({ ok: true, cid: published.cid, failed: null })
    expect(ok.history.map(h => h.cid)).toEqual([published.cid])
    const metrics = (await httpGet({ port }, '/metrics')).body
    expect(metrics).toMatch(/^cidsync_restorable 1$/m)
    expect(metrics).toMatch(/^cidsync_verify_last_success_timestamp_seconds \d+/m)

    // The stored segment (a single block) is damaged behind the service's back.
    const manifest = JSON.parse(await readManifest(dir, published.cid)) as { devices: Array<{ segments: Array<{ cid: string }> }> }
    const segment = manifest.devices[0]?.segments[0]?.cid as string
    flipStoredBlock(join(dir, 'state', 'service'), segment, 'last', 0xff)
    const failed = JSON.parse((await post('/verify')).body) as { restorable: boolean, failed: { cid: string, message: string } }
    expect(failed.restorable).toBe(false)
    expect(failed.failed.cid).toBe(segment)
    const bad = await statusOf(port)
    expect(bad.restorable).toMatchObject({ ok: false })
    expect(bad.restorable?.failed).toContain(segment)
    expect(statusProblems(bad).join('\n')).toContain('restorable: NO')
    expect((await httpGet({ port }, '/metrics')).body).toMatch(/^cidsync_restorable 0$/m)
    // The local index is not touched by a drill.
    expect((await statusOf(port)).index.files).toBe(1)

    // The advice status gives (publish again, then verify) works: the publish is not "unchanged",
    // and it writes the damaged segment afresh instead of naming it again.
    const again = await post('/snapshot')
    expect(again.status).toBe(200)
    const republished = JSON.parse(again.body) as { cid: string, skipped: boolean }
    expect(republished.skipped).toBe(false)
    expect(republished.cid).not.toBe(published.cid)
    expect(await readManifest(dir, republished.cid)).not.toContain(segment)
    expect(JSON.parse((await post('/verify')).body)).toMatchObject({ restorable: true, cid: republished.cid })
    // Once a drill passes, an unchanged index publishes nothing new.
    expect(JSON.parse((await post('/snapshot')).body)).toMatchObject({ skipped: true, cid: republished.cid })
  })
})

/** The manifest as this device cached it when it published (sync.sqlite). */
async function readManifest (dir: string, cid: string): Promise<string> {
  const Database = (await import('better-sqlite3')).default
  const db = new Database(join(dir, 'state', 'sync.sqlite'), { readonly: true })
  try {
    const body = db.prepare('SELECT body FROM manifest_cache WHERE cid = ?').pluck().get(cid) as string
    return JSON.stringify((JSON.parse(body) as { manifest: unknown }).manifest)
  } finally {
    db.close()
  }
}
