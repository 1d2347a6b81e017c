import { CID } from 'multiformats/cid'
import { isCidProfileName } from '../../content/index.js'
import { parseContentRecord } from '../../custody/index.js'
import type { Index } from '../../index/index.js'
import type { MirrorLog } from '../state/index.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'

/** Records read per batch, and batches per call: a first look at a large index is spread over passes. */
const BATCH = 500
const BATCHES = 20

/** The profile plain content was stored with: its file's, or what its CID can only have been made with. */
function plainProfile (cid: string, indexed: string | null): string {
  if (indexed !== null && isCidProfileName(indexed)) return indexed
  try {
    return CID.parse(cid).version === 0 ? 'unixfs-v0-2015' : SNAPSHOT_PROFILE.name
  } catch {
    return SNAPSHOT_PROFILE.name
  }
}

/**
 * Logs for the mirrors every content object the index's records name, whichever device stored
 * it (another device's records arrive when its segments are merged or restored; this device's
 * may predate the log): each device's records are read once, after the sequence number last
 * read of it (kept in sync.sqlite), and each object is logged once. Without this a mirror held
 * only what this device stored itself, yet was shown caught up, and a restore from it lacked the
 * other devices' files. Cheap when nothing came in (one query). This device's own records
 * (`self`) are read once, for what predates the log: what it stores from then on is logged as it
 * is uploaded (store-content.ts), and its sequence number moves with every file change, which
 * would read all its records again and again. Answers how many objects were new.
 */
export function logIndexContent (index: Index, log: MirrorLog, self?: string): number {
  const seen = { ...log.contentSeen() }
  const objects: Array<{ cid: string, profile: string }> = []
  let batches = 0
  let marked = false
  for (const device of index.content.contentDevices()) {
    const done = `${device.deviceId}#read`
    if (device.deviceId === self && seen[done] === 1) continue
    while ((seen[device.deviceId] ?? 0) < device.lastSeq && batches < BATCHES) {
      batches++
      const after = seen[device.deviceId] ?? 0
      const rows = index.content.recordsSince(device.deviceId, after, BATCH)
      for (const row of rows) {
        let record
        try {
          record = parseContentRecord({ cid: row.cid, size: row.size, sealing: row.sealing, keyId: row.keyId, keySalt: row.keySalt, objects: JSON.parse(row.objects) as unknown })
        } catch {
          // A record the index accepted but that does not parse names nothing a restore could use.
          continue
        }
        const profile = record.sealing === 'none' ? plainProfile(record.cid, row.cidProfile) : SNAPSHOT_PROFILE.name
        for (const [object] of record.objects) objects.push({ cid: object, profile })
      }
      // Read to the device's last sequence number: its next records come after it.
      seen[device.deviceId] = rows.length < BATCH ? Math.max(device.lastSeq, rows.at(-1)?.seq ?? 0) : (rows.at(-1)?.seq ?? after)
    }
    if (device.deviceId === self && (seen[self] ?? 0) >= device.lastSeq) {
      seen[done] = 1
      marked = true
    }
  }
  // One transaction: the objects, how far each device was read, and the pointer once after them.
  return batches === 0 && !marked ? 0 : log.logContent(objects, seen)
}
