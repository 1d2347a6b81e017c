import type { Entry, Index, StoredContentRow } from '../../index/index.js'
import type { GetOutcome } from './get-outcome.js'
import type { ContentRecord } from '../../custody/index.js'
import { firstUsable, RECORDS_AHEAD, type RecordLookup } from './targets.js'

/**
 * Other records of files whose objects were not found, asked once for the CIDs still failing.
 * A repack stores a pack's blobs again in a new object. Sealing is convergent, so those bytes
 * are the same, and any record of the same content brings the same file back.
 */
export type RecordFallback = (cids: readonly string[]) => Promise<Map<string, StoredContentRow[]>>

/** What a file's fetch answers when an object its record names is gone. */
export const NOT_FOUND = 'ERR_CONTENT_NOT_FOUND'

/** Whether `outcome` is a file that failed for an object not found: one a newer record may bring back. */
export function notFound (outcome: GetOutcome | undefined): boolean {
  return outcome?.outcome === 'failed' && outcome.kind === undefined && outcome.code === NOT_FOUND
}

/** `cids`' records from `lookup`, a batch of CIDs a statement, as a restore's rows ask them. */
export function lookupInBatches (lookup: RecordLookup, cids: readonly string[]): Map<string, StoredContentRow[]> {
  const found = new Map<string, StoredContentRow[]>()
  for (let from = 0; from < cids.length; from += RECORDS_AHEAD) {
    for (const [cid, rows] of lookup(cids.slice(from, from + RECORDS_AHEAD))) found.set(cid, rows)
  }
  return found
}

/**
 * Each CID's records from every index, newest first by `stored_at` as one index orders them.
 * A record two indexes hold alike is given once. On a tie the earlier index's comes first.
 */
export function recordsFrom (indexes: readonly Index[]): RecordLookup {
  return (cids) => {
    const merged = new Map<string, StoredContentRow[]>()
    for (const index of indexes) {
      for (const [cid, rows] of index.content.lookupMany(cids)) merged.set(cid, [...(merged.get(cid) ?? []), ...rows])
    }
    if (indexes.length < 2) return merged
    for (const [cid, rows] of merged) merged.set(cid, newestFirst(rows))
    return merged
  }
}

function newestFirst (rows: readonly StoredContentRow[]): StoredContentRow[] {
  const seen = new Set<string>()
  const unique = rows.filter((r) => {
    const key = JSON.stringify([r.deviceId, r.storedAt, r.sealing, r.keyId, r.keySalt, r.objects])
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
  // Stable: a tie keeps the order the indexes gave.
  return unique.sort((a, b) => b.storedAt - a.storedAt || (a.deviceId < b.deviceId ? -1 : a.deviceId > b.deviceId ? 1 : 0))
}

/** The objects a record names, as one key: records naming the same objects fail alike. */
function objectsKey (objects: ReadonlyArray<readonly [string, number, number]>): string {
  return [...new Set(objects.map(o => o[0]))].sort().join(' ')
}

function storedObjectsKey (row: StoredContentRow): string {
  try {
    return objectsKey(JSON.parse(row.objects) as Array<[string, number, number]>)
  } catch {
    // Unparsed, it is refused when used; its text keeps it apart from the others.
    return row.objects
  }
}

/** A run's files so far, and how to fetch some of them again. */
export interface NewerRecordsRun {
  readonly fallbacks: readonly RecordFallback[]
  /** The run's rows by place (`at`); a retry adds its rows at the end. */
  readonly rows: readonly Entry[]
  readonly outcomes: ReadonlyArray<GetOutcome | undefined>
  /** What each place whose objects were not found was fetched with. */
  readonly records: ReadonlyMap<number, ContentRecord>
  /** Checks and fetches the rows at `ats` again, with records from `lookup`; their places' outcomes are dropped. */
  readonly retry: (ats: readonly number[], lookup: RecordLookup) => Promise<void>
}

/**
 * Fetches again the files that failed for an object not found, with a record naming other
 * objects: from each fallback in turn, once each. A file with no such record keeps its failure.
 */
export async function tryNewerRecords (run: NewerRecordsRun): Promise<void> {
  // Per CID, the objects already tried: a record naming the same ones would fail the same way.
  const tried = new Map<string, Set<string>>()
  for (const fallback of run.fallbacks) {
    const failed = run.outcomes.flatMap((o, at) => notFound(o) ? [at] : [])
    if (failed.length === 0) return
    for (const at of failed) {
      const cid = run.rows[at]?.cid
      const record = run.records.get(at)
      if (cid == null || record === undefined) continue
      const sets = tried.get(cid) ?? new Set<string>()
      sets.add(objectsKey(record.objects))
      tried.set(cid, sets)
    }
    const cids = [...new Set(failed.flatMap(at => run.rows[at]?.cid ?? []))]
    const others = new Map<string, StoredContentRow[]>()
    for (const [cid, rows] of await fallback(cids)) {
      const left = rows.filter(r => tried.get(cid)?.has(storedObjectsKey(r)) !== true)
      // Only a record that can be used is worth a retry: else the failure said stays.
      if (typeof firstUsable(left) !== 'string') others.set(cid, left)
    }
    const again = failed.filter(at => others.has(run.rows[at]?.cid ?? ''))
    if (again.length > 0) await run.retry(again, (asked) => new Map(asked.flatMap(cid => others.has(cid) ? [[cid, others.get(cid) ?? []]] : [])))
  }
}
