import type { Database } from 'better-sqlite3'

/**
 * The schema of `sync.sqlite`, one step per version; `PRAGMA user_version` records the last step
 * applied. Steps are append-only: a released step is never edited, only followed by a new one.
 */
export const SYNC_MIGRATIONS: ReadonlyArray<(db: Database) => void> = [
  // 1: the publish jobs and the state keys. IF NOT EXISTS: files written before versions were
  // recorded (user_version 0) already hold these tables and read the same.
  (db) => {
    db.exec(`
      CREATE TABLE IF NOT EXISTS publish_jobs (id INTEGER PRIMARY KEY, step TEXT NOT NULL, base_cid TEXT, snapshot_path TEXT,
        snapshot_cid TEXT, marker TEXT, entries INTEGER, merges INTEGER NOT NULL DEFAULT 0, error TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
      CREATE TABLE IF NOT EXISTS sync_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
    `)
  },
  // 2: cidsync-sqlite/2: a publish's files and manifest, the manifests already read, the last drill.
  (db) => {
    db.exec(`
      ALTER TABLE publish_jobs ADD COLUMN files TEXT;
      ALTER TABLE publish_jobs ADD COLUMN manifest TEXT;
      CREATE TABLE manifest_cache (cid TEXT PRIMARY KEY, body TEXT NOT NULL, cached_at INTEGER NOT NULL) STRICT;
    `)
  },
  // 3: what to replicate to mirrors (one log, each object once, every publish's pointer), and
  // each mirror's place in it (docs/mirrors.md).
  (db) => {
    db.exec(`
      CREATE TABLE replica_log (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, cid TEXT NOT NULL, profile TEXT NOT NULL, added_at INTEGER NOT NULL) STRICT;
      CREATE INDEX replica_log_cid ON replica_log (cid, kind);
      CREATE TABLE mirror_state (mirror TEXT PRIMARY KEY, cursor INTEGER NOT NULL DEFAULT 0, published TEXT, drill TEXT, drill_success TEXT) STRICT;
    `)
  },
  // 4: each publish's node of the plain root this device uploaded, and the root of each publish it
  // made (docs/snapshot-format.md, "The plain root").
  (db) => {
    db.exec('CREATE TABLE plain_roots (manifest TEXT PRIMARY KEY, node TEXT, size INTEGER, root TEXT, made_at INTEGER NOT NULL) STRICT')
  },
  // 5: the repository's content index (docs/content-format.md, "Content index"): the records other
  // devices' index objects hold, and each index object found in the store with what came of it.
  (db) => {
    db.exec(`
      CREATE TABLE content_index (cid TEXT NOT NULL, key_id TEXT NOT NULL, device_id TEXT NOT NULL, seq INTEGER NOT NULL,
        record TEXT NOT NULL, object TEXT NOT NULL, PRIMARY KEY (cid, key_id, device_id)) STRICT;
      CREATE TABLE content_index_objects (cid TEXT PRIMARY KEY, state TEXT NOT NULL, device_id TEXT NOT NULL DEFAULT '',
        records INTEGER NOT NULL DEFAULT 0, tries INTEGER NOT NULL DEFAULT 0, error TEXT, found_at INTEGER NOT NULL, done_at INTEGER) STRICT;
      CREATE INDEX content_index_objects_state ON content_index_objects (state, found_at);
    `)
  },
  // 6: the files this device recorded from another device's index object, not uploaded: status
  // counts them as saved by dedup, though their records are now this device's own.
  (db) => {
    db.exec('CREATE TABLE content_taken (cid TEXT NOT NULL, key_id TEXT NOT NULL, PRIMARY KEY (cid, key_id)) STRICT')
  },
  // 7: the labels a publish job puts on its manifest (`cidsync snapshot --keep`), as JSON: a job
  // resumed after a crash, or sent round again by a merge, still carries them.
  (db) => {
    db.exec('ALTER TABLE publish_jobs ADD COLUMN marks TEXT')
  },
  // 8: the objects of the last prune list read (docs/retention.md, "Prune and a publish at once").
  (db) => {
    db.exec('CREATE TABLE prune_list (cid TEXT PRIMARY KEY) STRICT, WITHOUT ROWID')
  },
  // 9: the manifests and segments of publish attempts left for another device's (abandoned-uploads.ts).
  (db) => {
    db.exec('CREATE TABLE abandoned_uploads (cid TEXT PRIMARY KEY, kind TEXT NOT NULL, noted_at INTEGER NOT NULL) STRICT, WITHOUT ROWID')
  }
]

/** The `sync.sqlite` schema version this build writes. */
export const SYNC_SCHEMA_VERSION = SYNC_MIGRATIONS.length
