import type { Database as Db } from 'better-sqlite3'
import type { Sql } from './statement-cache.js'

/**
 * Compares this index's rows of a device with another index's (a restore drill's result), as far
 * as `seenUpTo` (default: the other index's sequence for it): rows written here since are not
 * expected there. Null when the other index does not know the device. Answers how many were compared
 * and how many differ, with the first that does.
 */
export function compareDevice (db: Db, sql: Sql, otherPath: string, deviceId: string, seenUpTo?: number): { readonly compared: number, readonly differing: number, readonly first: string | null } | null {
  sql('ATTACH DATABASE ? AS drill').run(otherPath)
  try {
    const upToSeq = seenUpTo ?? sql('SELECT last_seq FROM drill.devices WHERE device_id = ?').pluck().get(deviceId) as number | undefined
    if (upToSeq === undefined) return null
    const missingThere = sql(`SELECT folder || '/' || path FROM main.entries l WHERE l.device_id = ? AND l.seq <= ? AND l.deleted = 0
      AND NOT EXISTS (SELECT 1 FROM drill.entries r WHERE r.device_id = l.device_id AND r.folder = l.folder AND r.path = l.path AND r.seq = l.seq AND r.deleted = 0 AND r.cid IS l.cid AND r.size = l.size)`).pluck()
    const extraThere = sql(`SELECT folder || '/' || path FROM drill.entries r WHERE r.device_id = ? AND r.deleted = 0
      AND NOT EXISTS (SELECT 1 FROM main.entries l WHERE l.device_id = r.device_id AND l.folder = r.folder AND l.path = r.path AND (l.seq > ? OR l.seq = r.seq))`).pluck()
    const differing = [...missingThere.all(deviceId, upToSeq), ...extraThere.all(deviceId, upToSeq)] as string[]
    const compared = sql('SELECT COUNT(*) FROM drill.entries WHERE device_id = ? AND deleted = 0').pluck().get(deviceId) as number
    return { compared, differing: differing.length, first: differing[0] ?? null }
  } finally {
    db.exec('DETACH DATABASE drill')
  }
}
