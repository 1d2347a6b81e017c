import type { Database as Db } from 'better-sqlite3'
import { openCacheDatabase } from './cache-database.js'
import { STATE_NAMES } from '../config/index.js'

/**
 * Rows of the history's segments kept locally (`history-rows.sqlite` in the state dir): every
 * version of every row a fetched segment held, once (by device and sequence), keyed by
 * folder and path so a file's timeline is one index read. Which segments and publishes were taken
 * is recorded, so each segment is fetched once, ever (segments are immutable: named by CID).
 */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS versions (
    folder TEXT NOT NULL, path TEXT NOT NULL, device_id TEXT NOT NULL, seq INTEGER NOT NULL,
    size INTEGER NOT NULL, mtime_ms REAL NOT NULL, cid TEXT, deleted INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    PRIMARY KEY (folder, path, device_id, seq)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS segments_seen (cid TEXT PRIMARY KEY) STRICT;
  CREATE TABLE IF NOT EXISTS publishes_seen (cid TEXT PRIMARY KEY, at TEXT NOT NULL, device TEXT NOT NULL, readable INTEGER NOT NULL) STRICT;
`

export interface VersionRow {
  readonly device_id: string
  readonly seq: number
  readonly size: number
  readonly mtime_ms: number
  readonly cid: string | null
  readonly deleted: number
  readonly updated_at: number
}

export const HISTORY_ROWS_FILE = STATE_NAMES.historyRows

export class HistoryRows {
  readonly db: Db

  constructor (readonly path: string) {
    this.db = openCacheDatabase(path, SCHEMA)
  }

  hasPublish (cid: string): boolean {
    return this.db.prepare('SELECT 1 FROM publishes_seen WHERE cid = ?').pluck().get(cid) === 1
  }

  hasSegment (cid: string): boolean {
    return this.db.prepare('SELECT 1 FROM segments_seen WHERE cid = ?').pluck().get(cid) === 1
  }

  /** Every row of a fetched, checked segment database, kept once; then the segment is recorded as taken. */
  takeSegment (cid: string, database: string): number {
    this.db.prepare('ATTACH DATABASE ? AS segment').run(database)
    try {
      return this.db.transaction(() => {
        const taken = this.db.prepare(`INSERT OR IGNORE INTO versions (folder, path, device_id, seq, size, mtime_ms, cid, deleted, updated_at)
          SELECT folder, path, device_id, seq, size, mtime_ms, cid, deleted, updated_at FROM segment.entries`).run().changes
        this.db.prepare('INSERT OR IGNORE INTO segments_seen (cid) VALUES (?)').run(cid)
        return taken
      }).immediate()
    } finally {
      this.db.exec('DETACH DATABASE segment')
    }
  }

  /** Publishes whose every segment is taken (`readable` false: a `/1` snapshot, which has no segments to read versions from). */
  notePublishes (publishes: ReadonlyArray<{ readonly cid: string, readonly at: string, readonly device: string, readonly readable: boolean }>): void {
    const put = this.db.prepare('INSERT OR IGNORE INTO publishes_seen (cid, at, device, readable) VALUES (?, ?, ?, ?)')
    this.db.transaction(() => { for (const p of publishes) put.run(p.cid, p.at, p.device, p.readable ? 1 : 0) }).immediate()
  }

  /** How many publishes and segments are kept. */
  counts (): { publishes: number, segments: number } {
    return {
      publishes: this.db.prepare('SELECT COUNT(*) FROM publishes_seen').pluck().get() as number,
      segments: this.db.prepare('SELECT COUNT(*) FROM segments_seen').pluck().get() as number
    }
  }

  /** Every kept version of one file, any device. */
  versionsOf (folder: string, path: string): VersionRow[] {
    return this.db.prepare('SELECT device_id, seq, size, mtime_ms, cid, deleted, updated_at FROM versions WHERE folder = ? AND path = ?').all(folder, path) as VersionRow[]
  }

  close (): void {
    if (this.db.open) this.db.close()
  }
}
