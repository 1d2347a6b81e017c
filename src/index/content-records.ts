import type { Database, Statement } from 'better-sqlite3'
import { hasLiveCounts } from './entries.js'
import { openDatabase } from './open.js'

/** A content record as the index keeps it; the custody room parses `objects` before use. */
export interface StoredContentRow {
  readonly deviceId: string
  readonly cid: string
  readonly size: number
  readonly sealing: string
  readonly keyId: string
  readonly keySalt: string
  /** JSON, as written: `[[object, offset, length], ...]`. */
  readonly objects: string
  readonly storedAt: number
  readonly seq: number
}

/**
 * A record as an index object holds it: its JSON text, with the keys `cid`, `size`, `sealing`,
 * `keyId`, `keySalt`, `objects` (parsed), `seq` and `storedAt`; the two a batch is cut by; its CID.
 */
export interface IndexRecordText {
  readonly cid: string
  readonly seq: number
  readonly keyId: string
  readonly text: string
}

/** A live file of this device whose content no record holds yet under the key in use. */
export interface UnstoredFile {
  readonly folder: string
  readonly path: string
  readonly cid: string
  readonly size: number
  readonly mtimeMs: number
  readonly cidProfile: string
}

/** A live row (any device's) whose content some record holds: one per CID, for a restore drill to fetch. */
export interface StoredFile extends UnstoredFile {
  /** The first record's objects JSON: files of one pack sort together. */
  readonly objects: string
}

/**
 * Every stored file of the index at `path` in the order of their objects, read on a connection of
 * its own: one sort for the whole walk, where a page at a time sorts them all again. One row per
 * CID, and one more for each other size or CID profile its rows give it: a restore checks every
 * row, and a row of another size is forged. A CID's rows come together.
 */
export function * walkStoredFiles (path: string): Generator<StoredFile> {
  const db = openDatabase(path, { readonly: true, check: false })
  try {
    yield * db.prepare(`${STORED_FILES}, e.size, e.cid_profile ORDER BY objects, cid`).iterate() as IterableIterator<StoredFile>
  } finally {
    db.close()
  }
}

/** What a device records when its objects are stored. */
export type NewContentRecord = Omit<StoredContentRow, 'deviceId' | 'seq' | 'storedAt'>

const STORED_FILES = `SELECT e.folder, e.path, e.cid, e.size, e.mtime_ms AS mtimeMs, e.cid_profile AS cidProfile,
    (SELECT MIN(c.objects) FROM content c WHERE c.cid = e.cid) AS objects
  FROM entries e WHERE e.deleted = 0 AND e.cid IS NOT NULL AND EXISTS (SELECT 1 FROM content c WHERE c.cid = e.cid) GROUP BY e.cid`

export const CONTENT_COLUMNS = 'device_id, cid, size, sealing, key_id, key_salt, objects, stored_at, seq'

/**
 * A device's records by sequence: what a storing pass sends, a compaction writes again and a delta
 * carries. Not a step of the schema: segments leave it out, so older cidsync still reads them,
 * and an index restored from one makes it at its first such read.
 */
export const CONTENT_BY_SEQ = 'CREATE INDEX IF NOT EXISTS main.content_by_seq ON content (device_id, seq)'
const SELECT = 'SELECT device_id AS deviceId, cid, size, sealing, key_id AS keyId, key_salt AS keySalt, objects, stored_at AS storedAt, seq FROM content'

/**
 * The `content` table: where each stored file lies. A record belongs to the device that stored
 * the content and takes that device's next sequence number, as its entries do, so it travels in
 * the device's next segment. Statements are prepared once, on first use.
 */
export class ContentRecordStore {
  private prepared?: { byCid: Statement, byCids: Statement, ensureDevice: Statement, lastSeq: Statement, setSeq: Statement, upsert: Statement, has: Statement, count: Statement, unstored: Statement, folderState: Statement }

  /** {@link CONTENT_BY_SEQ} made (or found) on this connection. */
  private bySeq = false

  constructor (private readonly db: Database) {}

  /** Makes {@link CONTENT_BY_SEQ} once; a read-only connection reads without it, as before. */
  private ensureBySeq (): void {
    if (this.bySeq) return
    this.bySeq = true
    try {
      this.db.exec(CONTENT_BY_SEQ)
    } catch {}
  }

  private get statements (): NonNullable<ContentRecordStore['prepared']> {
    const db = this.db
    this.prepared ??= {
      // Newest first: after a prune, an older record may name objects deleted since, and the
      // device that stored the bytes again holds the newer one.
      byCid: db.prepare(`${SELECT} WHERE cid = ? ORDER BY stored_at DESC, device_id`),
      byCids: db.prepare(`${SELECT} WHERE cid IN (SELECT value FROM json_each(?)) ORDER BY cid, stored_at DESC, device_id`),
      ensureDevice: db.prepare('INSERT INTO devices (device_id, hostname, first_seen) VALUES (?, ?, ?) ON CONFLICT (device_id) DO NOTHING'),
      lastSeq: db.prepare('SELECT last_seq FROM devices WHERE device_id = ?').pluck(),
      setSeq: db.prepare('UPDATE devices SET last_seq = ? WHERE device_id = ?'),
      upsert: db.prepare(`INSERT INTO content (${CONTENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (device_id, cid) DO UPDATE SET size = excluded.size, sealing = excluded.sealing, key_id = excluded.key_id,
          key_salt = excluded.key_salt, objects = excluded.objects, stored_at = excluded.stored_at, seq = excluded.seq`),
      has: db.prepare('SELECT 1 FROM content WHERE cid = ? AND key_id = ? LIMIT 1').pluck(),
      count: db.prepare('SELECT COUNT(*) AS records, COALESCE(SUM(size), 0) AS bytes FROM content WHERE device_id = ?'),
      // In path order from a cursor, so a long queue is walked in batches, never all at once.
      unstored: db.prepare(`SELECT folder, path, cid, size, mtime_ms AS mtimeMs, cid_profile AS cidProfile FROM entries e
        WHERE device_id = ? AND folder = ? AND path > ? AND deleted = 0 AND cid IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM content c WHERE c.cid = e.cid AND c.key_id = ?)
        ORDER BY path LIMIT ?`),
      folderState: db.prepare(`SELECT EXISTS (SELECT 1 FROM content c WHERE c.cid = e.cid AND c.key_id = ?) AS stored, COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes
        FROM entries e WHERE device_id = ? AND folder = ? AND deleted = 0 AND cid IS NOT NULL GROUP BY stored`)
    }
    return this.prepared
  }

  /** Every device's records of a file's content, newest first. */
  lookup (cid: string): StoredContentRow[] {
    return this.statements.byCid.all(cid) as StoredContentRow[]
  }

  /** {@link lookup} of many files' content in one statement (a restore's rows, a batch at a time): by CID, each newest first. */
  lookupMany (cids: readonly string[]): Map<string, StoredContentRow[]> {
    const found = new Map<string, StoredContentRow[]>()
    for (const row of this.statements.byCids.all(JSON.stringify(cids)) as StoredContentRow[]) {
      const rows = found.get(row.cid)
      if (rows === undefined) found.set(row.cid, [row])
      else rows.push(row)
    }
    return found
  }

  /**
   * Which of `objects` some record of any device names. Each is one pass over the records: it is
   * asked of the few packs a killed repack stored before their records, never of every pack.
   */
  namedObjects (objects: readonly string[]): Set<string> {
    const named = new Set<string>()
    const names = this.db.prepare('SELECT 1 FROM content WHERE instr(objects, ?) > 0 LIMIT 1').pluck()
    for (const object of objects) if (names.get(JSON.stringify(object)) !== undefined) named.add(object)
    return named
  }

  /** Whether any device stored this content under the key `keyId` ("" for plain content). */
  has (cid: string, keyId: string): boolean {
    return this.statements.has.get(cid, keyId) === 1
  }

  /** This device's records and the bytes of content they describe. */
  totals (deviceId: string): { readonly records: number, readonly bytes: number } {
    return this.statements.count.get(deviceId) as { records: number, bytes: number }
  }

  /** This device's live files in `folder` after `afterPath` whose content is not stored under `keyId`, at most `limit`. */
  unstored (deviceId: string, folder: string, keyId: string, afterPath: string, limit: number): UnstoredFile[] {
    return this.statements.unstored.all(deviceId, folder, afterPath, keyId, limit) as UnstoredFile[]
  }

  /** How many of this device's live files in `folder`, and how many bytes, are stored under `keyId` and how many not. */
  folderTotals (deviceId: string, folder: string, keyId: string): { readonly stored: { files: number, bytes: number }, readonly unstored: { files: number, bytes: number } } {
    const totals = { stored: { files: 0, bytes: 0 }, unstored: { files: 0, bytes: 0 } }
    for (const row of this.statements.folderState.all(keyId, deviceId, folder) as Array<{ stored: number, files: number, bytes: number }>) {
      totals[row.stored === 1 ? 'stored' : 'unstored'] = { files: row.files, bytes: row.bytes }
    }
    return totals
  }

  /**
   * Bytes of this device's live files in `folders`, stored under `keyId`, that it did not upload
   * itself: all of a file another device stored, and every copy past the first of content at
   * several paths. Read from the records, so it is the same after a restart or a reload.
   * `taken`: CIDs this device recorded from another device's content index, uploading nothing.
   */
  savedByDedup (deviceId: string, folders: readonly string[], keyId: string, taken: readonly string[] = []): number {
    if (folders.length === 0) return 0
    return this.db.prepare(`WITH live AS (
        SELECT cid, size FROM entries e WHERE device_id = ? AND deleted = 0 AND cid IS NOT NULL AND folder IN (SELECT value FROM json_each(?))
          AND EXISTS (SELECT 1 FROM content c WHERE c.cid = e.cid AND c.key_id = ?))
      SELECT (SELECT COALESCE(SUM(size), 0) FROM live)
        - (SELECT COALESCE(SUM(size), 0) FROM (SELECT MAX(size) AS size FROM live l
            WHERE EXISTS (SELECT 1 FROM content c WHERE c.cid = l.cid AND c.device_id = ? AND c.key_id = ?)
              AND l.cid NOT IN (SELECT value FROM json_each(?)) GROUP BY cid))`)
      .pluck().get(deviceId, JSON.stringify(folders), keyId, deviceId, keyId, JSON.stringify(taken)) as number
  }

  /** At most `count` stored files of at most `maxSize` bytes each, picked at random, one per CID. */
  sampleStored (count: number, maxSize: number): StoredFile[] {
    return this.db.prepare(`SELECT * FROM (${STORED_FILES}) WHERE size <= ? ORDER BY random() LIMIT ?`).all(maxSize, count) as StoredFile[]
  }

  /**
   * Live rows whose size is not their content's newest record's, at most `limit`: a restore refuses
   * each as forged. A drill's sample checks them, beside the files it picks.
   */
  sizeMismatches (limit: number): StoredFile[] {
    return this.db.prepare(`SELECT e.folder, e.path, e.cid, e.size, e.mtime_ms AS mtimeMs, e.cid_profile AS cidProfile, '' AS objects
      FROM entries e WHERE e.deleted = 0 AND e.cid IS NOT NULL AND EXISTS (SELECT 1 FROM content c WHERE c.cid = e.cid)
        AND e.size != (SELECT c.size FROM content c WHERE c.cid = e.cid ORDER BY c.stored_at DESC, c.device_id LIMIT 1)
      ORDER BY e.folder, e.path LIMIT ?`).all(limit) as StoredFile[]
  }

  /** Stored files after `after` in the order of their objects (a pack's files together), at most `limit`, one per CID. */
  storedAfter (after: { objects: string, cid: string } | undefined, limit: number): StoredFile[] {
    return this.db.prepare(`SELECT * FROM (${STORED_FILES}) WHERE (objects, cid) > (?, ?) ORDER BY objects, cid LIMIT ?`).all(after?.objects ?? '', after?.cid ?? '', limit) as StoredFile[]
  }

  /**
   * Every record (live files or not: records are never deleted) after `after` in key order, at
   * most `limit`, each with the CID profile a row of its file was indexed under (null when no row
   * names it): plain content's object is the file itself, made with that profile.
   */
  recordsAfter (after: { deviceId: string, cid: string } | undefined, limit: number): Array<StoredContentRow & { readonly cidProfile: string | null }> {
    return this.db.prepare(`SELECT device_id AS deviceId, cid, size, sealing, key_id AS keyId, key_salt AS keySalt, objects, stored_at AS storedAt, seq,
      (SELECT e.cid_profile FROM entries e WHERE e.cid = c.cid LIMIT 1) AS cidProfile
      FROM content c WHERE (device_id, cid) > (?, ?) ORDER BY device_id, cid LIMIT ?`).all(after?.deviceId ?? '', after?.cid ?? '', limit) as Array<StoredContentRow & { cidProfile: string | null }>
  }

  /**
   * The objects (as recorded, JSON) of every record whose file a live row of any device names:
   * what the index holds now, not the versions its rows no longer name. A record is given once a
   * row naming it (the caller keeps each object once). Streamed, from the rows through the
   * records' CID index.
   */
  liveRecordObjects (): IterableIterator<string> {
    return this.db.prepare('SELECT c.objects FROM entries e JOIN content c ON c.cid = e.cid WHERE e.deleted = 0 AND e.cid IS NOT NULL').pluck().iterate() as IterableIterator<string>
  }

  /** Every record after `after` in key order, at most `limit`, without the CID profile {@link recordsAfter} looks up. */
  recordPage (after: { deviceId: string, cid: string } | undefined, limit: number): StoredContentRow[] {
    return this.db.prepare(`${SELECT} WHERE (device_id, cid) > (?, ?) ORDER BY device_id, cid LIMIT ?`).all(after?.deviceId ?? '', after?.cid ?? '', limit) as StoredContentRow[]
  }

  /**
   * Each device with content records, and the last sequence number the index holds of it: a
   * reader that keeps a cursor per device (the mirrors' log) reads records only when one moved.
   */
  contentDevices (): Array<{ readonly deviceId: string, readonly lastSeq: number }> {
    return this.db.prepare('SELECT device_id AS deviceId, last_seq AS lastSeq FROM devices d WHERE EXISTS (SELECT 1 FROM content c WHERE c.device_id = d.device_id)').all() as Array<{ deviceId: string, lastSeq: number }>
  }

  /**
   * A device's records after its sequence number `afterSeq`, in sequence order, at most `limit`,
   * each with its CID profile as {@link recordsAfter} gives it (looked up for plain content only,
   * once per call: `entries` has no index by CID).
   */
  recordsSince (deviceId: string, afterSeq: number, limit: number): Array<StoredContentRow & { readonly cidProfile: string | null }> {
    this.ensureBySeq()
    const rows = this.db.prepare(`${SELECT} WHERE device_id = ? AND seq > ? ORDER BY seq LIMIT ?`).all(deviceId, afterSeq, limit) as StoredContentRow[]
    const plain = rows.filter(r => r.sealing === 'none').map(r => r.cid)
    const profiles = new Map<string, string>()
    if (plain.length > 0) {
      const found = this.db.prepare('SELECT cid, MIN(cid_profile) AS profile FROM entries WHERE cid IN (SELECT value FROM json_each(?)) GROUP BY cid').all(JSON.stringify(plain)) as Array<{ cid: string, profile: string }>
      for (const f of found) profiles.set(f.cid, f.profile)
    }
    return rows.map(r => ({ ...r, cidProfile: profiles.get(r.cid) ?? null }))
  }

  /**
   * A device's records after `afterSeq`, in sequence order, at most `limit`, each as the JSON text
   * an index object holds (keys in the order of {@link IndexRecordText}). SQLite writes the text:
   * no record passes through JavaScript objects, which costs a compaction most of its time.
   */
  recordTextsSince (deviceId: string, afterSeq: number, limit: number): IndexRecordText[] {
    this.ensureBySeq()
    // Strict JSON only, as JSON.parse reads it: SQLite's json() would also take JSON5 and rewrite it.
    const rows = this.db.prepare(`SELECT seq, key_id AS keyId, cid, CASE WHEN json_valid(objects) THEN json_object('cid', cid, 'size', size, 'sealing', sealing,
        'keyId', key_id, 'keySalt', key_salt, 'objects', json(objects), 'seq', seq, 'storedAt', stored_at) END AS text
      FROM content WHERE device_id = ? AND seq > ? ORDER BY seq LIMIT ?`).all(deviceId, afterSeq, limit) as Array<Omit<IndexRecordText, 'text'> & { text: string | null }>
    for (const row of rows) if (row.text === null) throw new SyntaxError(`the content record of ${row.cid} holds objects that are not JSON`)
    return rows as IndexRecordText[]
  }

  /**
   * How many of a device's records come after its sequence number `afterSeq`, counting at most
   * `atMost`. Records under every key count: the count reads the index by sequence alone, where a
   * look at each record's key would read the whole table.
   */
  recordCount (deviceId: string, afterSeq = 0, atMost = Number.MAX_SAFE_INTEGER): number {
    this.ensureBySeq()
    return this.db.prepare('SELECT COUNT(*) FROM (SELECT 1 FROM content WHERE device_id = ? AND seq > ? LIMIT ?)').pluck().get(deviceId, afterSeq, atMost) as number
  }

  /** How many distinct CIDs of live rows some record holds. */
  storedCount (): number {
    return this.db.prepare(`SELECT COUNT(*) FROM (${STORED_FILES})`).pluck().get() as number
  }

  /**
   * The files a restored index lists (one per `folder/path`, as `restore --files` picks them) and
   * how many have their content stored (any live row of the path with a record for its CID). In
   * SQL, without reading the rows out: an index of 1,000,000 rows answers in well under a second,
   * at once when nothing is stored and one device holds every row.
   */
  restorable (): { readonly files: number, readonly stored: number } {
    const db = this.db
    const devices = db.prepare('SELECT COUNT(DISTINCT device_id) FROM entries WHERE deleted = 0').pluck()
    const anyContent = db.prepare('SELECT EXISTS (SELECT 1 FROM content)').pluck().get() === 1
    const stored = 'EXISTS (SELECT 1 FROM content c WHERE c.cid = e.cid)'
    const single = db.prepare('SELECT COUNT(*) FROM devices').pluck().get() as number <= 1 || devices.get() as number <= 1
    // Symlinks and directories are entries, not files: counted apart (a small index) and left out.
    const kinds = db.prepare("SELECT 1 FROM pragma_table_info('entries') WHERE name = 'kind'").pluck().get() === 1
    if (single) {
      const live = hasLiveCounts(db) ? 'SELECT COALESCE(SUM(live), 0) FROM live_counts' : 'SELECT COUNT(*) FROM entries WHERE deleted = 0'
      const others = kinds ? db.prepare("SELECT COUNT(*) FROM entries WHERE kind IN ('dir', 'symlink') AND deleted = 0").pluck().get() as number : 0
      return {
        files: (db.prepare(live).pluck().get() as number) - others,
        stored: anyContent ? db.prepare(`SELECT COUNT(*) FROM entries e WHERE deleted = 0 AND ${stored}`).pluck().get() as number : 0
      }
    }
    return db.prepare(`SELECT COUNT(*) AS files, COALESCE(SUM(stored), 0) AS stored FROM
      (SELECT MAX(${anyContent ? stored : '0'}) AS stored FROM entries e WHERE deleted = 0${kinds ? " AND (kind IS NULL OR kind = 'file')" : ''} GROUP BY folder, path)`).get() as { files: number, stored: number }
  }

  /**
   * This device's live rows written after `afterSeq` whose content some record says is stored:
   * rows a storing pass counts as stored without looking. In sequence order from a cursor, at
   * most `limit`.
   */
  storedSince (deviceId: string, afterSeq: number, limit: number): Array<{ readonly seq: number, readonly cid: string }> {
    return this.db.prepare(`SELECT e.seq, e.cid FROM entries e WHERE e.device_id = ? AND e.seq > ? AND e.deleted = 0 AND e.cid IS NOT NULL
      AND EXISTS (SELECT 1 FROM content c WHERE c.cid = e.cid) ORDER BY e.seq LIMIT ?`).all(deviceId, afterSeq, limit) as Array<{ seq: number, cid: string }>
  }

  /** How many of `cids` a live row of this device names: the files a storing pass would store. */
  liveAmong (deviceId: string, cids: readonly string[]): number {
    if (cids.length === 0) return 0
    return this.db.prepare(`SELECT COUNT(DISTINCT e.cid) FROM entries e WHERE e.device_id = ? AND e.deleted = 0
      AND e.cid IN (SELECT value FROM json_each(?))`).pluck().get(deviceId, JSON.stringify(cids)) as number
  }

  /** Drops one device's record of a file's content from this index (its objects are gone): the file is stored again. */
  dropRecord (deviceId: string, cid: string): void {
    this.db.prepare('DELETE FROM content WHERE device_id = ? AND cid = ?').run(deviceId, cid)
  }

  /** Records what this device stored, each with its next sequence number, in one transaction. */
  record (deviceId: string, hostname: string, records: readonly NewContentRecord[], now = Date.now()): void {
    if (records.length === 0) return
    const s = this.statements
    this.db.transaction(() => {
      s.ensureDevice.run(deviceId, hostname, now)
      let seq = s.lastSeq.get(deviceId) as number
      for (const r of records) {
        seq++
        s.upsert.run(deviceId, r.cid, r.size, r.sealing, r.keyId, r.keySalt, r.objects, now, seq)
      }
      s.setSeq.run(seq, deviceId)
    }).immediate()
  }
}
