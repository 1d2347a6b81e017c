import type { Database } from 'better-sqlite3'
import type { Config } from '../config/index.js'

/**
 * Whether a snapshot with no cipher may be opened here. A device that encrypts refuses one
 * unless told otherwise (`[snapshot] accept_unencrypted`, or restore's `--allow-unencrypted`):
 * without a cipher nothing proves a device of this user made it, and its rows would be merged
 * and then re-encrypted under the user's key.
 */
export function acceptsUnencrypted (config: Config, allowedByFlag = false): boolean {
  return config.snapshot.encryption === 'none' || config.snapshot.acceptUnencrypted || allowedByFlag
}

export interface MergeResult {
  /** Devices whose rows were taken from the other index (it had newer ones). */
  readonly devicesTaken: readonly string[]
}

/**
 * Merges another index into this one without conflicts: a device only writes its own rows, so
 * for every device but this one, the side with the higher sequence has its rows kept whole. This
 * device's own rows are never taken from elsewhere. One transaction.
 */
export function mergeIndex (db: Database, otherPath: string, selfDeviceId: string): MergeResult {
  db.prepare('ATTACH DATABASE ? AS other').run(otherPath)
  try {
    return db.transaction(() => {
      const theirs = db.prepare('SELECT device_id, hostname, first_seen, last_seq FROM other.devices WHERE device_id != ?').all(selfDeviceId) as Array<{ device_id: string, hostname: string, first_seen: number, last_seq: number }>
      const ours = db.prepare('SELECT last_seq FROM main.devices WHERE device_id = ?').pluck()
      const taken: string[] = []
      for (const device of theirs) {
        const mine = (ours.get(device.device_id) as number | undefined) ?? -1
        if (device.last_seq <= mine) continue
        db.prepare('DELETE FROM main.entries WHERE device_id = ?').run(device.device_id)
        db.prepare('INSERT INTO main.entries SELECT * FROM other.entries WHERE device_id = ?').run(device.device_id)
        db.prepare(`INSERT INTO main.devices (device_id, hostname, first_seen, last_seq) VALUES (?, ?, ?, ?)
          ON CONFLICT (device_id) DO UPDATE SET hostname = excluded.hostname, last_seq = excluded.last_seq`).run(device.device_id, device.hostname, device.first_seen, device.last_seq)
        taken.push(device.device_id)
      }
      // The other side knows this device at a higher sequence than its own index does (its index
      // was rebuilt, or restored from an older snapshot): count on from there, so that the next
      // publish of these rows wins over the stale ones others hold.
      const seenElsewhere = db.prepare('SELECT last_seq FROM other.devices WHERE device_id = ?').pluck().get(selfDeviceId) as number | undefined
      const mine = (ours.get(selfDeviceId) as number | undefined) ?? 0
      if (seenElsewhere !== undefined && seenElsewhere >= mine) {
        db.prepare('UPDATE main.devices SET last_seq = ? WHERE device_id = ?').run(seenElsewhere + 1, selfDeviceId)
      }
      return { devicesTaken: taken }
    }).immediate()
  } finally {
    db.exec('DETACH DATABASE other')
  }
}

/** What the index holds, as devices and their sequence numbers: equal markers, nothing new to publish. */
export function changeMarker (db: Database): string {
  return JSON.stringify(db.prepare('SELECT device_id, last_seq FROM devices ORDER BY device_id').raw().all())
}
