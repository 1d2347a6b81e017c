import type { Database, Statement } from 'better-sqlite3'
import { entryColumnsIn } from './segment-types.js'

/** What a merge took from the other index. */
export interface MergeResult {
  /** Devices whose rows were taken from the other index (it had newer ones). */
  readonly devicesTaken: readonly string[]
}

/**
 * The index's SQL that the sync and snapshot rooms need, kept here so that they never reach into
 * the connection: a consistent copy of the file, the merge of another index, the change marker.
 */
export class IndexSync {
  private readonly marker: Statement

  constructor (private readonly db: Database) {
    this.marker = db.prepare('SELECT device_id, last_seq FROM devices ORDER BY device_id').raw()
  }

  /** A consistent copy of the whole index at one instant (`VACUUM INTO`) into `path`, which must be empty or absent. */
  copyTo (path: string): void {
    this.db.prepare('VACUUM INTO ?').run(path)
  }

  /** What the index holds, as devices and their sequence numbers: equal markers, nothing new to publish. */
  changeMarker (): string {
    return JSON.stringify(this.marker.all())
  }

  /**
   * Merges another index into this one without conflicts: a device only writes its own rows, so
   * for every device but this one, the side with the higher sequence has its rows kept whole. This
   * device's own rows are never taken from elsewhere. One transaction.
   */
  mergeFrom (otherPath: string, selfDeviceId: string): MergeResult {
    const db = this.db
    db.prepare('ATTACH DATABASE ? AS other').run(otherPath)
    try {
      // Statements on `other` exist only while it is attached: prepared per merge (a rare event).
      return db.transaction(() => {
        const theirs = db.prepare('SELECT device_id, hostname, first_seen, last_seq FROM other.devices WHERE device_id != ?').all(selfDeviceId) as Array<{ device_id: string, hostname: string, first_seen: number, last_seq: number }>
        const ours = db.prepare('SELECT last_seq FROM main.devices WHERE device_id = ?').pluck()
        const drop = db.prepare('DELETE FROM main.entries WHERE device_id = ?')
        const columns = entryColumnsIn(db, 'other')
        const take = db.prepare(`INSERT INTO main.entries (${columns}) SELECT ${columns} FROM other.entries WHERE device_id = ?`)
        const device = db.prepare(`INSERT INTO main.devices (device_id, hostname, first_seen, last_seq) VALUES (?, ?, ?, ?)
          ON CONFLICT (device_id) DO UPDATE SET hostname = excluded.hostname, last_seq = excluded.last_seq`)
        // Rows from a whole-index snapshot come with no segment list: the next publish writes bases.
        const forget = db.prepare('DELETE FROM main.segment_chains WHERE device_id = ?')
        // The taken rows' live count, counted once (the other file may be older than live_counts).
        const recount = db.prepare(`INSERT INTO main.live_counts (device_id, live) SELECT ?, COUNT(*) FROM main.entries WHERE device_id = ? AND deleted = 0
          ON CONFLICT (device_id) DO UPDATE SET live = excluded.live`)
        const taken: string[] = []
        for (const other of theirs) {
          const mine = (ours.get(other.device_id) as number | undefined) ?? -1
          if (other.last_seq <= mine) continue
          drop.run(other.device_id)
          take.run(other.device_id)
          recount.run(other.device_id, other.device_id)
          device.run(other.device_id, other.hostname, other.first_seen, other.last_seq)
          forget.run(other.device_id)
          taken.push(other.device_id)
        }
        // The other side knows this device at a higher sequence than its own index does (its index
        // was rebuilt, or restored from an older snapshot): count on from there, so that the next
        // publish of these rows wins over the stale ones others hold.
        const seenElsewhere = db.prepare('SELECT last_seq FROM other.devices WHERE device_id = ?').pluck().get(selfDeviceId) as number | undefined
        const mine = (ours.get(selfDeviceId) as number | undefined) ?? 0
        if (seenElsewhere !== undefined && seenElsewhere >= mine) {
          db.prepare('UPDATE main.devices SET last_seq = ? WHERE device_id = ?').run(seenElsewhere + 1, selfDeviceId)
          forget.run(selfDeviceId)
        }
        return { devicesTaken: taken }
      }).immediate()
    } finally {
      db.exec('DETACH DATABASE other')
    }
  }
}
