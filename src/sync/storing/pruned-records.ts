import type { Logger } from 'pino'
import type { Index } from '../../index/index.js'
import type { ObjectStore } from '../../store/index.js'
import type { SyncStore } from '../state/index.js'
import { ListedObjects } from '../state/index.js'

/** Rows read at a time. */
const BATCH = 1000
/** The most listing rows one check reads. */
const MOST_LISTED = 1_000_000

/**
 * Before a pass, the rows this device wrote since its last publish whose content a record says
 * is stored: each record's objects must still be listed. A prune deletes the objects of versions
 * no kept publish holds, and the same bytes may come back later (a file added again, copied, or
 * restored). A record naming an object gone is dropped from this index, so the file is stored
 * again and the next publish never names what is not there. Answers how many were dropped.
 */
export async function dropPrunedRecords (components: { readonly index: Index, readonly deviceId: string, readonly objects: ObjectStore, readonly store: SyncStore, readonly logger: Logger }, signal?: AbortSignal): Promise<number> {
  const { index, deviceId, logger } = components
  let after = components.store.ownSeq(deviceId) ?? 0
  let listed: ListedObjects | undefined
  let dropped = 0
  for (;;) {
    const rows = index.content.storedSince(deviceId, after, BATCH)
    if (rows.length === 0) break
    for (const row of rows) {
      after = Math.max(after, row.seq)
      listed ??= new ListedObjects(components.objects, components.store.contentIndex, MOST_LISTED)
      // Every device's record of it: one naming a gone object would still count it stored.
      for (const record of index.content.lookup(row.cid)) {
        if (await allListed(listed, record.objects, signal)) continue
        index.content.dropRecord(record.deviceId, record.cid)
        dropped++
      }
    }
    if (rows.length < BATCH) break
  }
  if (dropped > 0) logger.warn({ dropped }, 'content records naming objects the store no longer lists (a prune deleted them) were dropped: their files are stored again')
  return dropped
}

async function allListed (listed: ListedObjects, json: string, signal?: AbortSignal): Promise<boolean> {
  let parts: unknown
  try {
    parts = JSON.parse(json)
  } catch {
    // A record that does not read is refused where it is used; it names nothing to check here.
    return true
  }
  if (!Array.isArray(parts)) return true
  for (const part of parts) {
    if (Array.isArray(part) && typeof part[0] === 'string' && !await listed.holds(part[0], signal)) return false
  }
  return true
}
