import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from './content-devices.js'
import { allRecordObjects, rewrite, RETENTION } from './repack-devices.js'

/**
 * A prune killed (power cut, OOM, kill -9) after a new pack is stored, before its moves are
 * recorded. When the live set changes before the rerun (a daemon that publishes first, a file
 * rewritten), the rerun makes other packs: the killed run's pack would stay for good, unless it
 * was noted before its upload for a later prune to delete.
 */
describe.skipIf(EXTERNAL)('a prune killed between new packs stored and their records', () => {
  it('leaves no upload that no record names, once the rerun and the next prunes are done', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    // Sixteen small files in one pack; eight of them rewritten twice: the first pack holds 8 live blobs of 16.
    const all = Array.from({ length: 16 }, (_, i) => i)
    const v1 = await rewrite(a, all, new Map())
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    const v2 = await rewrite(a, all.slice(0, 8), v1)
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    await rewrite(a, all.slice(0, 8), v2)
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    await ok(a, ['forget'])

    const sealed = async (): Promise<Set<string>> => {
      const found = new Set<string>()
      for await (const o of service.clients.objects.list()) if (o.name === 'cidsync-pack.sealed') found.add(o.cid)
      return found
    }
    const before = await sealed()
    // Two blobs a new pack: killed once the first new pack is stored, before its moves are recorded.
    const killed = await a.run(['prune'], { CIDSYNC_TEST_PACK_BLOBS: '2', CIDSYNC_FAILPOINT: 'prune:repack-stored' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    const made = [...await sealed()].filter(c => !before.has(c))
    expect(made.length).toBe(1)
    expect(allRecordObjects(a)).not.toContain(made[0])

    // Before the rerun the live set changes: the file the killed run moved first is rewritten twice.
    const first = firstMoved(a.state)
    await rewrite(a, [first], v1)
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
    await rewrite(a, [first], v1)
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T05:00:00.000Z' })
    await ok(a, ['forget'])
    await ok(a, ['prune'], { CIDSYNC_TEST_PACK_BLOBS: '2' })
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T06:00:00.000Z' })
    await ok(a, ['forget'])
    await ok(a, ['prune'], { CIDSYNC_TEST_PACK_BLOBS: '2' })
    await ok(a, ['prune'], { CIDSYNC_TEST_PACK_BLOBS: '2' })

    // Every pack the killed run stored is either named by a record or deleted by now.
    const named = new Set(allRecordObjects(a))
    const left = await sealed()
    const orphans = made.filter(cid => left.has(cid) && !named.has(cid))
    expect(orphans, `of ${made.length} packs the killed run stored`).toEqual([])
    // No record can name it: the rerun's packs start from another file.
    expect(left.has(made[0] ?? '')).toBe(false)
    const verified = await a.run(['verify', '--full'])
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)
  }, 600_000)
})

/** The number of the small file whose blob lies first in the mostly dead pack: the first a repack moves. */
function firstMoved (state: string): number {
  const db = new Database(join(state, 'index.sqlite'), { readonly: true })
  try {
    const rows = db.prepare(`SELECT e.path, c.objects FROM entries e JOIN content c ON c.cid = e.cid WHERE e.deleted = 0 AND e.path LIKE 's%.txt'`).all() as Array<{ path: string, objects: string }>
    const placed = rows.map(r => ({ n: Number(/s(\d+)\.txt/.exec(r.path)?.[1]), at: JSON.parse(r.objects) as Array<[string, number, number]> }))
    // s15 was never rewritten: its pack is the first one; its blob at the lowest offset goes first.
    const pack = placed.find(p => p.n === 15)?.at[0]?.[0]
    return placed.filter(p => p.at[0]?.[0] === pack).sort((x, y) => (x.at[0]?.[1] ?? 0) - (y.at[0]?.[1] ?? 0))[0]?.n ?? -1
  } finally {
    db.close()
  }
}
