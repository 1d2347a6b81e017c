import type { Database } from 'better-sqlite3'

/**
 * The index schema, one step per version; `PRAGMA user_version` records the last step applied.
 * Steps are append-only: a released step is never edited, only followed by a new one.
 */
export const MIGRATIONS: ReadonlyArray<(db: Database) => void> = [
  // 1: devices and their entries (DESIGN.md, "Several devices").
  (db) => {
    db.exec(`
      CREATE TABLE devices (
        device_id TEXT PRIMARY KEY,
        hostname TEXT NOT NULL DEFAULT '',
        first_seen INTEGER NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0
      ) STRICT;

      CREATE TABLE entries (
        device_id TEXT NOT NULL,
        folder TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ms REAL NOT NULL,
        cid TEXT,
        cid_profile TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0,
        seq INTEGER NOT NULL,
        PRIMARY KEY (device_id, folder, path)
      ) STRICT, WITHOUT ROWID;
    `)
    // No secondary indexes yet: each one tripled the cost of indexing 100,000 files (see
    // docs/benchmarks.md). A query that needs one adds it in its own migration.
  }
]

/** The schema version this build of cidsync writes. */
export const SCHEMA_VERSION = MIGRATIONS.length
