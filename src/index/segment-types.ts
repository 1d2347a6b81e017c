/** Which rows of one device a segment holds (docs/snapshot-format.md). */
export interface SegmentRange {
  readonly deviceId: string
  /** A base holds the device's rows at `to` (tombstones too: a restore is exact); a delta every row written in `(from, to]`. */
  readonly kind: 'base' | 'delta'
  readonly from: number
  readonly to: number
}

/** The segment list that rebuilds the rows this index holds of a device, as the sync room wrote it. */
export interface RecordedChain {
  readonly deviceId: string
  /** The sequence the list ends at: it describes this index's rows only while it equals the device's `last_seq`. */
  readonly toSeq: number
  /** The list, as JSON (the sync room's to read). */
  readonly segments: string
}

/** A device as this index knows it. */
export interface DeviceState { readonly deviceId: string, readonly hostname: string, readonly firstSeen: number, readonly lastSeq: number }

/** One device's rows arriving from segments already fetched, opened and checked (`checkSegment`). */
export interface IncomingDevice {
  readonly deviceId: string
  readonly hostname: string
  readonly firstSeen: number
  readonly lastSeq: number
  /** The rows are replaced whole (the files start with a base), or the deltas are applied on top. */
  readonly replace: boolean
  /** Segment databases, in order. */
  readonly files: readonly string[]
  readonly chain: RecordedChain
}

import type { Database } from 'better-sqlite3'
import { META_COLUMNS } from './file-meta.js'

/** The columns of an `entries` row before schema 7, which records what each entry is. */
export const BASE_COLUMNS = 'device_id, folder, path, size, mtime_ms, cid, cid_profile, updated_at, deleted, seq'

/** The columns of an `entries` row, in the order both the index and a segment hold them. */
export const COLUMNS = `${BASE_COLUMNS}, ${META_COLUMNS}`

/**
 * The columns an attached database's `entries` has of {@link COLUMNS}: a segment or an index from
 * before schema 7 has the base ones alone, and its rows read as recorded before kinds were.
 */
export function entryColumnsIn (db: Database, schema: string): string {
  const names = new Set((db.prepare(`SELECT name FROM pragma_table_info('entries', ?)`).pluck().all(schema) as string[]))
  return names.has('kind') ? COLUMNS : BASE_COLUMNS
}
