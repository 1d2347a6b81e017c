import { writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import type { Database as Db } from 'better-sqlite3'
import { openDatabase } from './open.js'
import { CONTENT_SCHEMA_VERSION, META_SCHEMA_VERSION, SCHEMA_VERSION } from './migrations.js'
import { CONTENT_BY_SEQ, CONTENT_COLUMNS } from './content-records.js'
import { BASE_COLUMNS, COLUMNS, type SegmentRange } from './segment-types.js'
import { LAST_SEQ, type Sql } from './statement-cache.js'
import { journalOff } from '../util/sqlite-file.js'

/**
 * Writes the rows of `range` into a new segment database at `path` (the index schema, that
 * device's row in `devices` with `last_seq = to`, nothing else). Synchronous, so no write of
 * this process lands between reading the device's sequence and copying its rows.
 */
export function writeSegment (db: Db, sql: Sql, path: string, range: SegmentRange, device: { readonly hostname: string, readonly firstSeen: number }): { readonly entries: number, readonly records: number } {
  writeFileSync(path, '', { mode: 0o600, flag: 'wx' })
  // The oldest schema that holds its rows (docs/content-format.md, "Older cidsync"): a segment
  // without content records stays readable by a cidsync from before them.
  const withContent = sql(range.kind === 'base'
    ? 'SELECT EXISTS (SELECT 1 FROM main.content WHERE device_id = ? AND seq <= ?)'
    : 'SELECT EXISTS (SELECT 1 FROM main.content WHERE device_id = ? AND seq > ? AND seq <= ?)').pluck()
    .get(...(range.kind === 'base' ? [range.deviceId, range.to] : [range.deviceId, range.from, range.to])) === 1
  // Likewise, rows that record nothing of what they are (written before schema 7) keep the schema before it.
  const withMeta = sql(range.kind === 'base'
    ? 'SELECT EXISTS (SELECT 1 FROM main.entries WHERE device_id = ? AND seq <= ? AND kind IS NOT NULL)'
    : 'SELECT EXISTS (SELECT 1 FROM main.entries WHERE device_id = ? AND seq > ? AND seq <= ? AND kind IS NOT NULL)').pluck()
    .get(...(range.kind === 'base' ? [range.deviceId, range.to] : [range.deviceId, range.from, range.to])) === 1
  const version = withMeta ? SCHEMA_VERSION : withContent ? META_SCHEMA_VERSION - 1 : CONTENT_SCHEMA_VERSION - 1
  const columns = version >= META_SCHEMA_VERSION ? COLUMNS : BASE_COLUMNS
  openDatabase(path, { check: false, schemaVersion: version }).close()
  // Back to a rollback journal: the file must be whole by itself when it is sealed and when it is restored.
  const fresh = new Database(path)
  fresh.pragma('journal_mode = DELETE')
  fresh.close()
  // A delta reads its rows by sequence; an index restored from a segment file (which leaves the
  // index out, keeping bases small) gets it back here, once.
  if (range.kind === 'delta') {
    db.exec('CREATE INDEX IF NOT EXISTS main.entries_by_seq ON entries (device_id, seq)')
    db.exec(CONTENT_BY_SEQ)
  }
  sql('ATTACH DATABASE ? AS segment').run(path)
  try {
    db.exec('DROP INDEX IF EXISTS segment.entries_by_seq')
    journalOff(db, 'segment')
    db.pragma('segment.synchronous = OFF')
    return db.transaction(() => {
      sql('INSERT INTO segment.devices (device_id, hostname, first_seen, last_seq) VALUES (?, ?, ?, ?)').run(range.deviceId, device.hostname, device.firstSeen, range.to)
      // A base of the only device the index holds rows of: every row, copied page by page
      // (SQLite's transfer optimization, as VACUUM INTO does; no WHERE), not row by row.
      const alone = range.kind === 'base' && version === SCHEMA_VERSION && sql('SELECT EXISTS (SELECT 1 FROM main.entries WHERE device_id < ?) OR EXISTS (SELECT 1 FROM main.entries WHERE device_id > ?)').pluck().get(range.deviceId, range.deviceId) === 0
      const copied = alone
        ? sql('INSERT INTO segment.entries SELECT * FROM main.entries').run()
        : range.kind === 'base'
          ? sql(`INSERT INTO segment.entries (${columns}) SELECT ${columns} FROM main.entries WHERE device_id = ? AND seq <= ?`).run(range.deviceId, range.to)
          : sql(`INSERT INTO segment.entries (${columns}) SELECT ${columns} FROM main.entries WHERE device_id = ? AND seq > ? AND seq <= ?`).run(range.deviceId, range.from, range.to)
      // The file carries its live count (a base becomes a restored index as it is): a base of
      // the device as it is now has the index's own; anything else counts its rows.
      const lastSeq = sql(LAST_SEQ).pluck().get(range.deviceId) as number | undefined
      const live = range.kind === 'base' && range.to === lastSeq
        ? sql('SELECT COALESCE((SELECT live FROM main.live_counts WHERE device_id = ?), 0)').pluck().get(range.deviceId) as number
        : sql('SELECT COUNT(*) FROM segment.entries WHERE deleted = 0').pluck().get() as number
      if (live > 0) sql('INSERT INTO segment.live_counts (device_id, live) VALUES (?, ?)').run(range.deviceId, live)
      // Content records travel with the rows of their device, by the same sequence range.
      let records = 0
      if (withContent) {
        const insert = range.kind === 'base'
          ? sql(`INSERT INTO segment.content (${CONTENT_COLUMNS}) SELECT ${CONTENT_COLUMNS} FROM main.content WHERE device_id = ? AND seq <= ?`)
          : sql(`INSERT INTO segment.content (${CONTENT_COLUMNS}) SELECT ${CONTENT_COLUMNS} FROM main.content WHERE device_id = ? AND seq > ? AND seq <= ?`)
        records = insert.run(...(range.kind === 'base' ? [range.deviceId, range.to] : [range.deviceId, range.from, range.to])).changes
      }
      return { entries: copied.changes, records }
    })()
  } finally {
    db.exec('DETACH DATABASE segment')
  }
}
