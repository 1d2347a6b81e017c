import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, type ContentDevice } from './content-devices.js'
import { deletedOf, expectKeptRestorable, retentionLeftovers, Versions, type PruneJson } from './retention-devices.js'

const RETENTION = 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n'
/** Two objects a delete call: a prune of a few objects deletes in several batches. */
const BATCH = 2
const SMALL_BATCHES = { CIDSYNC_TEST_PRUNE_BATCH: String(BATCH) }

/** Each step of a prune, in order, and how many objects the killed run deleted by then. */
const STEPS: ReadonlyArray<{ point: string, deletedBefore: number }> = [
  { point: 'prune:read', deletedBefore: 0 },
  { point: 'prune:listed', deletedBefore: 0 },
  // The list of what it deletes is on the service, the pointer not read again yet.
  { point: 'prune:announced', deletedBefore: 0 },
  { point: 'prune:checked', deletedBefore: 0 },
  // Deleted on the service, not yet logged for the mirrors.
  { point: 'prune:deleted', deletedBefore: BATCH },
  { point: 'prune:batch', deletedBefore: BATCH }
]

/**
 * The replication log's rows, oldest first: an object logged and then gone from the service must
 * have a delete row after it, or a mirror keeps it for good (and one behind asks the primary for it).
 */
function replicaLog (d: ContentDevice): Array<{ seq: number, kind: string, cid: string }> {
  const db = new Database(join(d.state, 'sync.sqlite'), { readonly: true })
  try {
    return db.prepare("SELECT seq, kind, cid FROM replica_log WHERE kind IN ('object', 'delete') ORDER BY seq").all() as Array<{ seq: number, kind: string, cid: string }>
  } finally {
    db.close()
  }
}

describe.skipIf(EXTERNAL)('prune killed at each step', () => {
  it('keeps every kept publish restorable; the rerun deletes the rest of the plan and logs every delete for the mirrors', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    const versions = new Versions(a)
    const scratch = join(root, 'scratch')
    await versions.publish()
    for (const { point, deletedBefore } of STEPS) {
      await versions.publish()
      await ok(a, ['forget'])
      const plan = deletedOf(JSON.parse((await ok(a, ['prune', '--dry-run', '--json'])).stdout) as PruneJson)
      // The old version's content, its segment and manifests: more than one batch.
      expect(plan, point).toBeGreaterThan(BATCH)

      const killed = await a.run(['prune'], { ...SMALL_BATCHES, CIDSYNC_FAILPOINT: point })
      expect(killed.signal, `${point}: ${killed.stderr}`).toBe('SIGKILL')
      await expectKeptRestorable(a, versions, scratch, `killed at ${point}`)

      const rerun = JSON.parse((await ok(a, ['prune', '--json'], SMALL_BATCHES)).stdout) as PruneJson
      expect(deletedOf(rerun), point).toBe(plan - deletedBefore)
      expect(deletedOf(JSON.parse((await ok(a, ['prune', '--dry-run', '--json'])).stdout) as PruneJson), point).toBe(0)
      await expectKeptRestorable(a, versions, scratch, `rerun after ${point}`)
      expect(await retentionLeftovers(a), point).toEqual([])

      // Every object the service lost was logged as deleted after it was logged as stored.
      const rows = replicaLog(a)
      const lastStored = new Map<string, number>()
      const lastDeleted = new Map<string, number>()
      for (const row of rows) (row.kind === 'object' ? lastStored : lastDeleted).set(row.cid, row.seq)
      const unlogged: string[] = []
      for (const [cid, seq] of lastStored) {
        if (!await service.clients.objects.has(cid) && (lastDeleted.get(cid) ?? 0) < seq) unlogged.push(cid)
      }
      expect(unlogged, `${point}: deleted from the service, never logged for the mirrors`).toEqual([])
    }
  }, 900_000)

  it('a prune killed between its list\'s upload and the list pointer leaves no object for good: the next prune deletes it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    const versions = new Versions(a)
    // A prune announces a list only when content dies: the second one here, once a repack's old pack goes.
    await versions.publish()
    for (let i = 0; i < 2; i++) {
      await versions.publish()
      await ok(a, ['forget'])
      if (i === 0) await ok(a, ['prune'])
    }
    expect((JSON.parse((await ok(a, ['prune', '--dry-run', '--json'])).stdout) as PruneJson).deleted.content).toBeGreaterThan(0)
    const listed = async (): Promise<Set<string>> => {
      const cids = new Set<string>()
      for await (const object of service.clients.objects.list()) cids.add(object.cid)
      return cids
    }
    const before = await listed()
    const killed = await a.run(['prune'], { CIDSYNC_FAILPOINT: 'prune:list-stored' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    const orphans = [...await listed()].filter(cid => !before.has(cid))
    // The list alone: nothing was deleted before the pointer check.
    expect(orphans).toHaveLength(1)

    const rerun = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson
    expect(rerun.deleted.manifest).toBeGreaterThanOrEqual(1)
    expect(await service.clients.objects.has(orphans[0] as string)).toBe(false)
    // The rerun's own list stays, named by the list pointer; a third prune keeps it too.
    expect(deletedOf(JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson)).toBe(0)
    await expectKeptRestorable(a, versions, join(root, 'scratch'), 'after the orphaned list went')
  }, 300_000)
})
