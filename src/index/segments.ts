import type { Database as Db } from 'better-sqlite3'
import { hasLiveCounts } from './entries.js'
import { applyDevices, catchUpSelf } from './segment-apply.js'
import { compareDevice } from './segment-compare.js'
import type { DeviceState, IncomingDevice, RecordedChain, SegmentRange } from './segment-types.js'
import { writeSegment } from './segment-write.js'
import { SET_CHAIN, statementCache, type Sql } from './statement-cache.js'

export type { DeviceState, IncomingDevice, RecordedChain, SegmentRange } from './segment-types.js'
export { checkSegment, checkSegmentAsync } from './segment-check.js'

/**
 * The index's side of `cidsync-sqlite/2` (docs/snapshot-format.md), one operation a file behind
 * this face: cutting one device's rows into a segment database (segment-write.ts), checking one
 * (segment-check.ts), applying them (segment-apply.ts), comparing a drill's result
 * (segment-compare.ts), and the table of segment lists (`segment_chains`, never in a segment's
 * rows). Statements are prepared once per connection, on first use (a read-only connection to an
 * older index never needs them).
 */
export class SegmentStore {
  private readonly sql: Sql
  private liveSql: string | undefined

  constructor (private readonly db: Db) {
    this.sql = statementCache(db)
  }

  /** Every device this index holds rows of, with its sequence. */
  devices (): DeviceState[] {
    return this.sql('SELECT device_id AS deviceId, hostname, first_seen AS firstSeen, last_seq AS lastSeq FROM devices ORDER BY device_id').all() as DeviceState[]
  }

  /** Live rows of every device (kept in `live_counts`, not counted): what a manifest's `entries` and the pointer's `memories` say. */
  liveEntries (): number {
    this.liveSql ??= hasLiveCounts(this.db) ? 'SELECT COALESCE(SUM(live), 0) FROM live_counts' : 'SELECT COUNT(*) FROM entries WHERE deleted = 0'
    return this.sql(this.liveSql).pluck().get() as number
  }

  /** Every recorded segment list. */
  chains (): RecordedChain[] {
    return this.sql('SELECT device_id AS deviceId, to_seq AS toSeq, segments FROM segment_chains').all() as RecordedChain[]
  }

  /** Records the lists a publish made (after its pointer PUT held), one transaction. */
  recordChains (chains: readonly RecordedChain[]): void {
    this.db.transaction(() => {
      for (const chain of chains) this.sql(SET_CHAIN).run(chain.deviceId, chain.toSeq, chain.segments)
    }).immediate()
  }

  /**
   * Writes the rows of `range` into a new segment database at `path` (the index schema, that
   * device's row in `devices` with `last_seq = to`, nothing else). Synchronous, so no write of
   * this process lands between reading the device's sequence and copying its rows.
   */
  writeSegment (path: string, range: SegmentRange, device: { readonly hostname: string, readonly firstSeen: number }): { readonly entries: number, readonly records: number } {
    return writeSegment(this.db, this.sql, path, range, device)
  }

  /**
   * Applies other devices' segments: for each device, its rows replaced whole or the deltas put on
   * top (later files win), its `devices` row and its recorded list, all in one transaction. `self`
   * is never among them.
   */
  applyDevices (devices: readonly IncomingDevice[]): void {
    applyDevices(this.db, this.sql, devices)
  }

  /** Others know this device above its own sequence: count on from there (segment-apply.ts). */
  catchUpSelf (selfDeviceId: string, seenElsewhere: number): boolean {
    return catchUpSelf(this.db, this.sql, selfDeviceId, seenElsewhere)
  }

  /** This index's rows of a device against a drill's rebuilt index (segment-compare.ts). */
  compareDevice (otherPath: string, deviceId: string, seenUpTo?: number): { readonly compared: number, readonly differing: number, readonly first: string | null } | null {
    return compareDevice(this.db, this.sql, otherPath, deviceId, seenUpTo)
  }
}
