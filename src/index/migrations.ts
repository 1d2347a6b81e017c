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
    // No secondary index here: each one costs every write of the indexer (docs/benchmarks.md,
    // "What moved the numbers"). A query that needs one adds it in its own migration.
  },
  // 2: the account's side, mirrored by reconciliation: uploads, IPNS names, deals asked for.
  (db) => {
    db.exec(`
      CREATE TABLE remote_files (
        id TEXT PRIMARY KEY,
        cid TEXT NOT NULL,
        file_name TEXT NOT NULL,
        size INTEGER NOT NULL,
        sent_for_deal TEXT NOT NULL,
        created_at INTEGER,
        seen_at INTEGER NOT NULL,
        gone INTEGER NOT NULL DEFAULT 0
      ) STRICT;
      CREATE INDEX remote_files_by_cid ON remote_files (cid);

      CREATE TABLE remote_names (
        ipns_name TEXT PRIMARY KEY,
        ipns_id TEXT NOT NULL,
        cid TEXT NOT NULL,
        last_update INTEGER,
        seen_at INTEGER NOT NULL
      ) STRICT;

      CREATE TABLE deals (
        cid TEXT PRIMARY KEY,
        requested_at INTEGER NOT NULL,
        device_id TEXT NOT NULL,
        deal_id INTEGER,
        provider TEXT,
        status TEXT,
        checked_at INTEGER
      ) STRICT;
    `)
  },
  // 3: the segment list (cidsync-sqlite/2) that rebuilds the rows this index holds of each device.
  (db) => {
    db.exec(`
      CREATE TABLE segment_chains (
        device_id TEXT PRIMARY KEY,
        to_seq INTEGER NOT NULL,
        segments TEXT NOT NULL
      ) STRICT;
    `)
  },
  // 4: a device's rows by sequence: a publish's delta reads the rows written in (from, to] without
  // scanning all of them (docs/benchmarks.md, "Publishing `cidsync-sqlite/2`").
  // Segment files leave it out (SegmentStore.writeSegment), so an index restored from one adds it
  // on its first delta.
  (db) => {
    db.exec('CREATE INDEX IF NOT EXISTS entries_by_seq ON entries (device_id, seq)')
  },
  // 5: each device's live entries, kept as rows change (EntryStore.apply, SegmentStore.applyDevices,
  // IndexSync.mergeFrom, segment files), not counted: counting every row would be most of a small
  // publish (docs/benchmarks.md, "Publishing `cidsync-sqlite/2`"). A device with no row has none.
  (db) => {
    db.exec(`
      CREATE TABLE live_counts (
        device_id TEXT PRIMARY KEY,
        live INTEGER NOT NULL
      ) STRICT;
      INSERT INTO live_counts (device_id, live) SELECT device_id, COUNT(*) FROM entries WHERE deleted = 0 GROUP BY device_id;
    `)
  },
  // 6: where each stored file's content lies (docs/content-format.md), rows of their device like
  // entries: numbered with its sequence, carried in its segments, merged by the same rule.
  (db) => {
    db.exec(`
      CREATE TABLE content (
        device_id TEXT NOT NULL,
        cid TEXT NOT NULL,
        size INTEGER NOT NULL,
        sealing TEXT NOT NULL,
        key_id TEXT NOT NULL,
        key_salt TEXT NOT NULL,
        objects TEXT NOT NULL,
        stored_at INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (device_id, cid)
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX content_by_cid ON content (cid);
    `)
  },
  // 7: what each entry is (docs/snapshot-format.md, "What a file is"): its type, mode, owner,
  // a symlink's target and a hard link's group. NULL in rows written before: a regular file
  // whose mode and owner were not recorded. Added columns cost nothing to rows already there.
  (db) => {
    db.exec(`
      ALTER TABLE entries ADD COLUMN kind TEXT;
      ALTER TABLE entries ADD COLUMN mode INTEGER;
      ALTER TABLE entries ADD COLUMN uid INTEGER;
      ALTER TABLE entries ADD COLUMN gid INTEGER;
      ALTER TABLE entries ADD COLUMN owner TEXT;
      ALTER TABLE entries ADD COLUMN grp TEXT;
      ALTER TABLE entries ADD COLUMN target TEXT;
      ALTER TABLE entries ADD COLUMN link_group TEXT;
      CREATE INDEX entries_not_files ON entries (deleted) WHERE kind IN ('dir', 'symlink');
    `)
    // Links and directories are few beside files: counting them (to count files) reads this small index, not every row.
  }
]

/** The first schema with content records: a segment without any is written at the one before, which older cidsync reads. */
export const CONTENT_SCHEMA_VERSION = 6

/** The first schema that records what each entry is: a segment whose rows record nothing of it is written at the one before. */
export const META_SCHEMA_VERSION = 7

/** The schema version this build of cidsync writes. */
export const SCHEMA_VERSION = MIGRATIONS.length
