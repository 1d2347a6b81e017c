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

/** The columns of an `entries` row, in the order both the index and a segment hold them. */
export const COLUMNS = 'device_id, folder, path, size, mtime_ms, cid, cid_profile, updated_at, deleted, seq'
