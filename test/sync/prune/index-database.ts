import Database from 'better-sqlite3'

export const DEVICE_A = 'aaaaaaaa-0000-4000-8000-000000000000'

/** An entry row: its path, sequence, file CID (none for a directory or a link) and whether deleted; device A's unless named. */
export type EntryRow = readonly [path: string, seq: number, cid: string | null, deleted: number, device?: string]
/** A content record: its file CID and objects JSON; sequence 1, device A's and key k1 unless named. */
export type RecordRow = readonly [cid: string, objects: string, seq?: number, device?: string, key?: string]

/** An index database with the columns a prune reads: these entries and content records. A later row of the same key replaces one. */
export function indexDatabase (path: string, entries: readonly EntryRow[], records: readonly RecordRow[]): void {
  const db = new Database(path)
  try {
    db.exec(`CREATE TABLE entries (device_id TEXT NOT NULL, folder TEXT NOT NULL, path TEXT NOT NULL, seq INTEGER NOT NULL, cid TEXT, deleted INTEGER NOT NULL,
        PRIMARY KEY (device_id, folder, path)) WITHOUT ROWID;
      CREATE TABLE content (device_id TEXT NOT NULL, cid TEXT NOT NULL, sealing TEXT NOT NULL, key_id TEXT NOT NULL, objects TEXT NOT NULL, seq INTEGER NOT NULL,
        PRIMARY KEY (device_id, cid)) WITHOUT ROWID;`)
    const entry = db.prepare('INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?)')
    const record = db.prepare('INSERT OR REPLACE INTO content VALUES (?, ?, ?, ?, ?, ?)')
    db.transaction(() => {
      for (const [p, seq, cid, deleted, device] of entries) entry.run(device ?? DEVICE_A, 'notes', p, seq, cid, deleted)
      for (const [cid, objects, seq, device, key] of records) record.run(device ?? DEVICE_A, cid, 'aes-256-gcm/1', key ?? 'k1', objects, seq ?? 1)
    })()
  } finally {
    db.close()
  }
}
