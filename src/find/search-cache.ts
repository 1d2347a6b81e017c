import type { Database as Db, Statement } from 'better-sqlite3'
import type { Entry, Index } from '../index/index.js'
import { openCacheDatabase } from './cache-database.js'

/**
 * The search cache: a copy of every device's rows (folder, path, size, mtime, CID, deleted) with a
 * trigram full-text index over `folder/path` and an index on CID, in its own file beside the index.
 * Kept apart on purpose: the index's write path (the cold index, timed against `sha256sum`) pays
 * nothing for it; the cache catches up lazily, when a search runs, by reading the rows written
 * since (by sequence) through the index's face. A copy that cannot have followed (a device's
 * sequence went back, a device vanished, its live count disagrees) is built again whole.
 */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS marks (device_id TEXT PRIMARY KEY, seen_seq INTEGER NOT NULL, live INTEGER NOT NULL) STRICT;
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
  CREATE TABLE IF NOT EXISTS rows (
    id INTEGER PRIMARY KEY, device_id TEXT NOT NULL, folder TEXT NOT NULL, path TEXT NOT NULL, text TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ms REAL NOT NULL, cid TEXT, deleted INTEGER NOT NULL, seq INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    UNIQUE (device_id, folder, path)
  ) STRICT;
  DROP INDEX IF EXISTS rows_by_cid;
  CREATE INDEX IF NOT EXISTS rows_by_cid_device ON rows (cid, deleted, size, device_id) WHERE cid IS NOT NULL;
  CREATE VIRTUAL TABLE IF NOT EXISTS rows_fts USING fts5(text, content='rows', content_rowid='id', tokenize='trigram');
`

/** A row of the search cache, as the find room's queries answer it. */
export interface CachedRow {
  readonly id: number
  readonly device_id: string
  readonly folder: string
  readonly path: string
  readonly size: number
  readonly mtime_ms: number
  readonly cid: string | null
  readonly deleted: number
  readonly seq: number
  readonly updated_at: number
}

export interface CatchUp {
  /** Rows copied or changed by this call. */
  readonly rows: number
  /** The cache was built again whole (first use, or the index went back). */
  readonly rebuilt: boolean
  /** The cache holds everything the index did when the call began (false: a budget stopped it). */
  readonly complete: boolean
}

export class SearchCache {
  readonly db: Db
  private readonly s: Record<'building' | 'setBuilding' | 'doneBuilding' | 'marker' | 'setMarker' | 'marks' | 'setMark' | 'find' | 'insert' | 'insertFts' | 'update', Statement>

  constructor (readonly path: string) {
    this.db = openCacheDatabase(path, SCHEMA)
    const db = this.db
    this.s = {
      building: db.prepare("SELECT value FROM meta WHERE key = 'building'").pluck(),
      setBuilding: db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('building', '1')"),
      doneBuilding: db.prepare("DELETE FROM meta WHERE key = 'building'"),
      marker: db.prepare("SELECT value FROM meta WHERE key = 'marker'").pluck(),
      setMarker: db.prepare("INSERT INTO meta (key, value) VALUES ('marker', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
      marks: db.prepare('SELECT device_id AS deviceId, seen_seq AS seenSeq, live FROM marks'),
      setMark: db.prepare('INSERT INTO marks (device_id, seen_seq, live) VALUES (?, ?, ?) ON CONFLICT (device_id) DO UPDATE SET seen_seq = excluded.seen_seq, live = excluded.live'),
      find: db.prepare('SELECT id, deleted FROM rows WHERE device_id = ? AND folder = ? AND path = ?'),
      insert: db.prepare('INSERT INTO rows (device_id, folder, path, text, size, mtime_ms, cid, deleted, seq, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      insertFts: db.prepare('INSERT INTO rows_fts (rowid, text) VALUES (?, ?)'),
      update: db.prepare('UPDATE rows SET size = ?, mtime_ms = ?, cid = ?, deleted = ?, seq = ?, updated_at = ? WHERE id = ?')
    }
  }

  /**
   * Brings the cache up to the index: nothing when no device's sequence moved (one small read),
   * the rows written since otherwise, everything again when the index cannot have grown from
   * what the cache holds. One transaction: a search beside it sees the cache before or after.
   * With a `budget` (the daemon, which must not stall for a whole build), at most that many rows
   * are copied a call; `complete` says whether the cache reached the index.
   */
  catchUp (index: Index, options: { readonly budget?: number } = {}): CatchUp {
    const marker = index.changeMarker()
    if (this.s.marker.get() === marker) return { rows: 0, rebuilt: false, complete: true }
    const budget = options.budget ?? Number.POSITIVE_INFINITY
    return this.db.transaction((): CatchUp => {
      if (this.s.marker.get() === marker) return { rows: 0, rebuilt: false, complete: true }
      const devices = index.entries.devices()
      const marks = new Map((this.s.marks.all() as Array<{ deviceId: string, seenSeq: number, live: number }>).map(m => [m.deviceId, m]))
      const lastSeqs = new Map(devices.map(d => [d.id, d.lastSeq]))
      const wentBack = [...marks.values()].some(m => (lastSeqs.get(m.deviceId) ?? -1) < m.seenSeq)
      let rebuilt = false
      if (wentBack || (marks.size === 0 && this.s.building.get() === undefined)) {
        this.clear()
        marks.clear()
        rebuilt = true
      }
      // A whole build in one go fills the full-text index once at the end (faster than row by row).
      const bulk = rebuilt && budget === Number.POSITIVE_INFINITY
      if (rebuilt && !bulk) this.s.setBuilding.run()
      let rows = 0
      let complete = true
      const mismatched: string[] = []
      for (const device of devices) {
        const mark = marks.get(device.id) ?? { deviceId: device.id, seenSeq: -1, live: 0 }
        let seen = mark.seenSeq
        let live = mark.live
        let stopped = false
        for (const entry of index.entries.rowsSince(device.id, mark.seenSeq)) {
          if (rows >= budget) { stopped = true; break }
          if (bulk) {
            this.s.insert.run(...insertValues(entry))
            live += entry.deleted ? 0 : 1
          } else {
            live += this.upsert(entry)
          }
          seen = entry.seq
          rows++
        }
        this.s.setMark.run(device.id, seen, live)
        if (stopped) { complete = false; break }
        if (live !== index.entries.liveCount(device.id)) mismatched.push(device.id)
      }
      if (bulk) this.db.exec("INSERT INTO rows_fts (rows_fts) VALUES ('rebuild')")
      if (!complete) return { rows, rebuilt, complete }
      this.s.doneBuilding.run()
      // A live count that disagrees while the index stood still: rows went away without a
      // sequence (a device's rows replaced whole): the next search builds the cache again.
      if (mismatched.length > 0 && index.changeMarker() === marker) this.db.exec('DELETE FROM marks')
      else this.s.setMarker.run(mismatched.length > 0 ? '' : marker)
      return { rows, rebuilt, complete }
    }).immediate()
  }

  close (): void {
    if (this.db.open) this.db.close()
  }

  private clear (): void {
    this.db.exec("DELETE FROM rows; DELETE FROM marks; DELETE FROM meta; INSERT INTO rows_fts (rows_fts) VALUES ('delete-all')")
  }

  /** One row copied onto the cache; answers how the live count moves (-1, 0, 1). */
  private upsert (entry: Entry): number {
    const found = this.s.find.get(entry.deviceId, entry.folder, entry.path) as { id: number, deleted: number } | undefined
    if (found === undefined) {
      const id = Number(this.s.insert.run(...insertValues(entry)).lastInsertRowid)
      // The text never changes for a row (it is its key): only new rows enter the full-text index.
      this.s.insertFts.run(id, `${entry.folder}/${entry.path}`)
      return entry.deleted ? 0 : 1
    }
    this.s.update.run(entry.size, entry.mtimeMs, entry.cid, entry.deleted ? 1 : 0, entry.seq, entry.updatedAt, found.id)
    return (entry.deleted ? 0 : 1) - (found.deleted === 1 ? 0 : 1)
  }
}

function insertValues (e: Entry): [string, string, string, string, number, number, string | null, number, number, number] {
  return [e.deviceId, e.folder, e.path, `${e.folder}/${e.path}`, e.size, e.mtimeMs, e.cid, e.deleted ? 1 : 0, e.seq, e.updatedAt]
}
