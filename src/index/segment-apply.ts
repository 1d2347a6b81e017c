import type { Database as Db } from 'better-sqlite3'
import { CONTENT_COLUMNS } from './content-records.js'
import { COLUMNS, entryColumnsIn, type IncomingDevice } from './segment-types.js'
import { FORGET_CHAIN, LAST_SEQ, SET_CHAIN, type Sql } from './statement-cache.js'

/**
 * Applies other devices' segments: for each device, its rows replaced whole or the deltas put on
 * top (later files win), its `devices` row and its recorded list, all in one transaction. `self`
 * is never among them.
 */
export function applyDevices (db: Db, sql: Sql, devices: readonly IncomingDevice[]): void {
  if (devices.length === 0) return
  db.exec(`CREATE TEMP TABLE IF NOT EXISTS incoming AS SELECT ${COLUMNS} FROM main.entries WHERE 0`)
  db.exec('CREATE UNIQUE INDEX IF NOT EXISTS temp.incoming_key ON incoming (device_id, folder, path)')
  db.exec(`CREATE TEMP TABLE IF NOT EXISTS incoming_content AS SELECT ${CONTENT_COLUMNS} FROM main.content WHERE 0`)
  db.exec('CREATE UNIQUE INDEX IF NOT EXISTS temp.incoming_content_key ON incoming_content (device_id, cid)')
  try {
    for (const device of devices) {
      for (const file of device.files) {
        sql('ATTACH DATABASE ? AS segment').run(file)
        try {
          // A segment from before schema 7 records nothing of what its entries are: those columns stay NULL.
          const columns = entryColumnsIn(db, 'segment')
          sql(`INSERT OR REPLACE INTO temp.incoming (${columns}) SELECT ${columns} FROM segment.entries WHERE device_id = ?`).run(device.deviceId)
          // Segments of an older schema carry no content records.
          if (sql("SELECT 1 FROM segment.sqlite_schema WHERE type = 'table' AND name = 'content'").pluck().get() === 1) {
            sql(`INSERT OR REPLACE INTO temp.incoming_content (${CONTENT_COLUMNS}) SELECT ${CONTENT_COLUMNS} FROM segment.content WHERE device_id = ?`).run(device.deviceId)
          }
        } finally {
          db.exec('DETACH DATABASE segment')
        }
      }
    }
    db.transaction(() => {
      for (const device of devices) {
        // Live counts from the incoming rows (a segment's own count is not needed): replaced rows
        // are theirs alone; rows put on top add theirs and take away the live ones they replace.
        const incomingLive = sql('SELECT COUNT(*) FROM temp.incoming WHERE device_id = ? AND deleted = 0').pluck().get(device.deviceId) as number
        if (device.replace) {
          sql('DELETE FROM main.entries WHERE device_id = ?').run(device.deviceId)
          sql('INSERT INTO main.live_counts (device_id, live) VALUES (?, ?) ON CONFLICT (device_id) DO UPDATE SET live = excluded.live').run(device.deviceId, incomingLive)
        } else {
          // CROSS JOIN keeps the incoming rows outside: the planner otherwise walks all of the
          // device's rows in the index to probe a few (docs/benchmarks.md, "Restoring the index").
          const replacedLive = sql(`SELECT COUNT(*) FROM temp.incoming i CROSS JOIN main.entries e
            ON e.device_id = i.device_id AND e.folder = i.folder AND e.path = i.path WHERE i.device_id = ? AND e.deleted = 0`).pluck().get(device.deviceId) as number
          sql('INSERT INTO main.live_counts (device_id, live) VALUES (?, ?) ON CONFLICT (device_id) DO UPDATE SET live = live + excluded.live').run(device.deviceId, incomingLive - replacedLive)
        }
        sql(`INSERT OR REPLACE INTO main.entries (${COLUMNS}) SELECT ${COLUMNS} FROM temp.incoming WHERE device_id = ?`).run(device.deviceId)
        if (device.replace) sql('DELETE FROM main.content WHERE device_id = ?').run(device.deviceId)
        sql(`INSERT OR REPLACE INTO main.content (${CONTENT_COLUMNS}) SELECT ${CONTENT_COLUMNS} FROM temp.incoming_content WHERE device_id = ?`).run(device.deviceId)
        sql(`INSERT INTO main.devices (device_id, hostname, first_seen, last_seq) VALUES (?, ?, ?, ?)
          ON CONFLICT (device_id) DO UPDATE SET hostname = excluded.hostname, last_seq = excluded.last_seq`).run(device.deviceId, device.hostname, device.firstSeen, device.lastSeq)
        sql(SET_CHAIN).run(device.chain.deviceId, device.chain.toSeq, device.chain.segments)
      }
    }).immediate()
  } finally {
    db.exec('DROP TABLE IF EXISTS temp.incoming')
    db.exec('DROP TABLE IF EXISTS temp.incoming_content')
  }
}

/**
 * Others know this device at `seenElsewhere`, above its own sequence: its index was rebuilt or
 * restored from an older point. Count on from there and forget its own list, so its next publish
 * writes a base that wins its rows back.
 */
export function catchUpSelf (db: Db, sql: Sql, selfDeviceId: string, seenElsewhere: number): boolean {
  return db.transaction(() => {
    const mine = (sql(LAST_SEQ).pluck().get(selfDeviceId) as number | undefined) ?? 0
    if (seenElsewhere < mine) return false
    sql('UPDATE devices SET last_seq = ? WHERE device_id = ?').run(seenElsewhere + 1, selfDeviceId)
    sql(FORGET_CHAIN).run(selfDeviceId)
    return true
  }).immediate()
}
