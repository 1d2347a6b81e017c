import Database from 'better-sqlite3'
import { closeSync, openSync, rmSync } from 'node:fs'
import type { StoredUpload } from '../../store/index.js'
import { journalOff } from '../../util/sqlite-file.js'
import { namesAnObject, recordKey, recordParts, SEEN_RECORDS, UNSEEN_RECORD } from './record-parts.js'

/** The working sets' page cache (KiB), and that of each segment read through them. */
const SETS_CACHE_KIB = 4096
const ATTACHED_CACHE_KIB = 2048

/** A base's file, settled from where it lies: its device, and the last sequence it holds. */
export interface BaseFile { readonly path: string, readonly device: string, readonly to: number }

/** The kind of a candidate, for the order of deletion and the counts. */
export type CandidateKind = 'root' | 'content' | 'segment' | 'manifest'

/**
 * A prune's working sets in a SQLite file (0600, removed when closed): the file CIDs live rows
 * name, the objects kept, and the candidates with their kind. Each insert batch is one transaction.
 */
export class ObjectSets {
  private readonly db: Database.Database
  private readonly addLive: Database.Statement
  private readonly addCandidate: Database.Statement
  private readonly addTo: Database.Statement
  private readonly noteListed: Database.Statement
  private readonly noteWatched: Database.Statement
  private readonly noteUpload: Database.Statement
  private readonly uploadsOfCid: Database.Statement
  private watching = false

  constructor (private readonly path: string) {
    // Made 0600 before SQLite opens it: it names every object of the history.
    closeSync(openSync(path, 'wx', 0o600))
    this.db = new Database(path)
    journalOff(this.db)
    this.db.pragma('synchronous = OFF')
    // Its page cache, and each attached file's, kept small: the sets grow with the history, and
    // their statements read each table in key order, so a larger cache held more without saving time.
    this.db.pragma(`cache_size = -${SETS_CACHE_KIB}`)
    // Its own and each attached file locked once, not at each statement: nothing else opens them.
    this.db.pragma('locking_mode = EXCLUSIVE')
    this.db.exec(`CREATE TABLE live_files (cid TEXT PRIMARY KEY) WITHOUT ROWID;
      CREATE TABLE live (cid TEXT PRIMARY KEY) WITHOUT ROWID;
      CREATE TABLE candidates (cid TEXT PRIMARY KEY, kind TEXT NOT NULL, rank INTEGER NOT NULL, size INTEGER, stored_at INTEGER) WITHOUT ROWID;
      CREATE TABLE records (file TEXT NOT NULL, device TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, object TEXT NOT NULL,
        offset INTEGER NOT NULL, length INTEGER, parts INTEGER NOT NULL, PRIMARY KEY (file, device, key, seq, object, offset)) WITHOUT ROWID;
      CREATE TABLE newest (file TEXT NOT NULL, device TEXT NOT NULL, key TEXT NOT NULL, object TEXT NOT NULL, offset INTEGER NOT NULL, length INTEGER, parts INTEGER NOT NULL);
      CREATE TABLE base_parts (file TEXT NOT NULL, device TEXT NOT NULL, key TEXT NOT NULL, seq INTEGER NOT NULL, object TEXT NOT NULL, offset INTEGER NOT NULL, length INTEGER, parts INTEGER NOT NULL);
      CREATE TABLE rows (device TEXT NOT NULL, folder TEXT NOT NULL, path TEXT NOT NULL, seq INTEGER NOT NULL, cid TEXT, deleted INTEGER NOT NULL,
        PRIMARY KEY (device, folder, path, seq)) WITHOUT ROWID;
      CREATE TABLE tos (device TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (device, seq)) WITHOUT ROWID;
      CREATE TABLE watched (cid TEXT PRIMARY KEY, listed INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
      CREATE TABLE uploads (cid TEXT NOT NULL, id TEXT NOT NULL, stored_at INTEGER, PRIMARY KEY (cid, id)) WITHOUT ROWID;`)
    this.addLive = this.db.prepare('INSERT INTO live (cid) VALUES (?) ON CONFLICT DO NOTHING')
    this.addCandidate = this.db.prepare('INSERT INTO candidates (cid, kind, rank) VALUES (?, ?, ?) ON CONFLICT DO NOTHING')
    this.addTo = this.db.prepare('INSERT INTO tos (device, seq) VALUES (?, ?) ON CONFLICT DO NOTHING')
    this.noteListed = this.db.prepare('UPDATE candidates SET size = ?, stored_at = ? WHERE cid = ?')
    this.noteWatched = this.db.prepare('UPDATE watched SET listed = 1 WHERE cid = ?')
    // Only a candidate's uploads: the others are never deleted, and an account may list millions.
    this.noteUpload = this.db.prepare('INSERT INTO uploads (cid, id, stored_at) SELECT @cid, @id, @at WHERE EXISTS (SELECT 1 FROM candidates WHERE cid = @cid) ON CONFLICT DO NOTHING')
    this.uploadsOfCid = this.db.prepare('SELECT id, stored_at FROM uploads WHERE cid = ?')
  }

  /**
   * Takes an index database's rows and its records' objects, in SQL: no row passes through
   * JavaScript. A `/1` snapshot (`whole`) holds only live rows: each names a live file. A record
   * whose objects do not read names none; where it is used it is refused.
   */
  take (path: string, whole: boolean): void {
    this.attached(path, () => {
      this.db.transaction(() => {
        this.db.exec(whole
          ? 'INSERT INTO live_files (cid) SELECT cid FROM named.entries WHERE cid IS NOT NULL AND deleted = 0 ORDER BY cid ON CONFLICT DO NOTHING'
          : `INSERT INTO rows (device, folder, path, seq, cid, deleted) SELECT device_id, folder, path, seq, cid, deleted FROM named.entries
              ORDER BY device_id, folder, path, seq ON CONFLICT DO NOTHING`)
        // Each version of each record, one row per object it names.
        if (this.hasContent()) for (const select of recordParts('1')) this.db.exec(`INSERT INTO records ${select} ORDER BY 1, 2, 3, 4, 5, 6 ON CONFLICT DO NOTHING`)
      })()
    })
  }

  /** A kept publish holds each device's rows up to this sequence. */
  keptAt (device: string, seq: number): void {
    this.addTo.run(device, seq)
  }

  /**
   * Once every other segment is taken: settles what is live, reading each of `bases` (bases
   * among the segments read, not taken) from its file. An object the newest version of a record of
   * a live file names is kept; every other object a record names is a candidate. An object holding
   * a live file and a dead one is kept. An older version of a record (its blob copied into a new
   * pack by a repack) keeps nothing: a restore of a publish that holds it reads the newest version
   * instead, whose bytes are the same (convergent sealing). Newest is per device and key: another
   * key's version is no replacement.
   */
  settle (bases: readonly BaseFile[] = []): void {
    // Rows oldest first: a device's newer base wins a tie of sequence, as it was read first.
    const byAge = [...bases].sort((a, b) => a.to - b.to)
    // Each base beside the nearest newer one of its device, if any: the rows it holds as they are need nothing.
    const newerOf = (i: number): string[] => byAge.slice(i + 1).filter(b => b.device === byAge[i]?.device).map(b => b.path)
    for (const [i, { path }] of byAge.entries()) {
      const nearest = newerOf(i).slice(0, 1)
      this.attached(path, () => { this.baseRows(nearest.length > 0) }, nearest)
    }
    // A version of a path is live when a kept publish's sequence for its device falls between it
    // and the next version read: it is what that publish holds there. Each set is filled in its
    // key order: inserts scattered over a large b-tree read and write a page each.
    this.db.exec(`INSERT INTO live_files (cid) SELECT cid FROM (
        SELECT device, seq, cid, deleted, LEAD(seq) OVER (PARTITION BY device, folder, path ORDER BY seq) AS next FROM rows) r
      WHERE cid IS NOT NULL AND deleted = 0
        AND EXISTS (SELECT 1 FROM tos t WHERE t.device = r.device AND t.seq >= r.seq AND (r.next IS NULL OR t.seq < r.next))
      ORDER BY cid ON CONFLICT DO NOTHING`)
    // Records oldest first too, so a newer base's version wins a tie of sequence; each base is read
    // beside the newer ones of its device, the nearest first: they hold later versions of its records.
    for (const [i, { path }] of byAge.entries()) {
      const newer = newerOf(i)
      this.attached(path, () => { this.baseRecords(newer.length) }, newer)
    }
    this.db.exec(`INSERT INTO newest SELECT r.file, r.device, r.key, r.object, r.offset, r.length, r.parts FROM records r
        WHERE r.file IN (SELECT cid FROM live_files)
          AND r.seq = (SELECT MAX(n.seq) FROM records n WHERE n.file = r.file AND n.device = r.device AND n.key = r.key);
      -- Every column the repack's plan reads of a pack (livePacks, liveBlobs): its walks read the index alone.
      CREATE INDEX newest_object ON newest (object, offset, length, file, device, parts, key);
      INSERT INTO live (cid) SELECT DISTINCT object FROM newest ORDER BY object ON CONFLICT DO NOTHING;
      INSERT INTO candidates (cid, kind, rank) SELECT DISTINCT object, 'content', 0 FROM records ORDER BY object ON CONFLICT DO NOTHING;`)
  }

  /**
   * A base's rows, once its device's other segments are taken. Only a path some other segment
   * holds needs its versions weighed: its row joins `rows`, and wins a tie of sequence, as it did
   * read first. Every other path has this one version, live when a kept publish of its device
   * comes at or after it: its file is live at once. A row the nearest newer base (`newer0`, when
   * `newer`) holds as it is needs nothing: that base's row says the same.
   */
  private baseRows (newer: boolean): void {
    const same = newer
      ? ' AND NOT EXISTS (SELECT 1 FROM newer0.entries n WHERE n.device_id = e.device_id AND n.folder = e.folder AND n.path = e.path AND n.seq = e.seq AND n.cid IS e.cid AND n.deleted = e.deleted)'
      : ''
    this.db.exec(`INSERT INTO rows (device, folder, path, seq, cid, deleted)
        SELECT e.device_id, e.folder, e.path, e.seq, e.cid, e.deleted FROM (SELECT DISTINCT device, folder, path FROM rows) r
        JOIN named.entries e ON e.device_id = r.device AND e.folder = r.folder AND e.path = r.path
        ORDER BY 1, 2, 3, 4 ON CONFLICT DO UPDATE SET cid = excluded.cid, deleted = excluded.deleted;
      INSERT INTO live_files (cid) SELECT e.cid FROM named.entries e
        WHERE e.cid IS NOT NULL AND e.deleted = 0${same}
          AND NOT EXISTS (SELECT 1 FROM rows r WHERE r.device = e.device_id AND r.folder = e.folder AND r.path = e.path)
          AND EXISTS (SELECT 1 FROM tos t WHERE t.device = e.device_id AND t.seq >= e.seq)
        ORDER BY e.cid ON CONFLICT DO NOTHING`)
  }

  /**
   * A base's records, once every file live is known. A record some other segment holds a version
   * of joins `records`, to be weighed with it. Every other one is the newest unless a newer base
   * of its device (`newer` of them, attached as `newer0` on, the nearest first) holds a later
   * version; the newest is kept where its file is live. Each object it names is a candidate. A
   * record the nearest newer base holds as it is needs nothing more: that base's counted it.
   */
  private baseRecords (newer: number): void {
    if (!this.hasContent()) return
    // A version at the same sequence as the base's (a device that reused one) is the base's, as when the base was read first.
    for (const select of recordParts(SEEN_RECORDS.where, SEEN_RECORDS.from)) {
      this.db.exec(`INSERT INTO records ${select} ORDER BY 1, 2, 3, 4, 5, 6 ON CONFLICT DO UPDATE SET length = excluded.length, parts = excluded.parts`)
    }
    if (newer === 0) {
      for (const select of recordParts(UNSEEN_RECORD)) this.db.exec(`INSERT INTO base_parts ${select}`)
    } else {
      // Most records of an older base are the newer one's as they are: sorted out in one walk, the
      // few left then read for their objects, where each of the two reads would walk them all.
      this.db.exec(`CREATE TEMP TABLE changed AS SELECT * FROM named.content c WHERE ${UNSEEN_RECORD} AND NOT EXISTS (SELECT 1 FROM newer0.content n
        WHERE n.device_id = c.device_id AND n.cid = c.cid AND n.seq IS c.seq AND n.objects = c.objects AND n.key_id IS c.key_id AND n.sealing IS c.sealing)`)
      try {
        for (const select of recordParts('1', 'temp.changed c')) this.db.exec(`INSERT INTO base_parts ${select}`)
      } finally {
        this.db.exec('DROP TABLE temp.changed')
      }
    }
    const replaced = Array.from({ length: newer }, (_, i) => ` AND NOT EXISTS (SELECT 1 FROM newer${i}.content n WHERE n.device_id = b.device AND n.cid = b.file
      AND ${recordKey('n')} = b.key AND COALESCE(n.seq, 0) > b.seq AND ${namesAnObject('n')})`).join('')
    this.db.exec(`INSERT INTO newest SELECT file, device, key, object, offset, length, parts FROM base_parts b WHERE file IN (SELECT cid FROM live_files)${replaced};
      INSERT INTO candidates (cid, kind, rank) SELECT DISTINCT object, 'content', 0 FROM base_parts ORDER BY object ON CONFLICT DO NOTHING;
      DELETE FROM base_parts;`)
  }

  /** Runs `use` with the database at `path` attached as `named`, and each of `newer` as `newer0` on. */
  private attached (path: string, use: () => void, newer: readonly string[] = []): void {
    const names = ['named', ...newer.map((_, i) => `newer${i}`)]
    let attached = 0
    try {
      for (const [i, file] of [path, ...newer].entries()) {
        this.db.prepare(`ATTACH DATABASE ? AS ${names[i] as string}`).run(file)
        attached++
        this.db.pragma(`${names[i] as string}.cache_size = -${ATTACHED_CACHE_KIB}`)
      }
      use()
    } finally {
      for (const name of names.slice(0, attached)) this.db.exec(`DETACH DATABASE ${name}`)
    }
  }

  /** Whether the attached database has content records: a segment from before them has no table. */
  private hasContent (): boolean {
    return this.db.prepare("SELECT 1 FROM named.sqlite_master WHERE type = 'table' AND name = 'content'").get() !== undefined
  }

  /**
   * Each live content object as the store listed it, with the bytes of the blobs live records
   * name in it, and whether a repack may move them: every such record is `device`'s, names one
   * object, with known offsets, under sealed content. Most dead share first.
   */
  livePacks (device: string): Array<{ cid: string, size: number, storedAt: number | null, liveBytes: number, movable: boolean }> {
    return this.db.prepare(`SELECT c.cid, c.size, c.stored_at AS storedAt, b.liveBytes, m.movable FROM candidates c
      JOIN (SELECT object, SUM(length) AS liveBytes FROM (SELECT DISTINCT object, offset, length FROM newest WHERE length IS NOT NULL) GROUP BY object) b ON b.object = c.cid
      JOIN (SELECT object, MIN(device = ? AND parts = 1 AND offset >= 0 AND length IS NOT NULL AND key LIKE '%/aes-256-gcm/1') AS movable FROM newest GROUP BY object) m ON m.object = c.cid
      WHERE c.kind = 'content' AND c.size IS NOT NULL ORDER BY CAST(c.size - b.liveBytes AS REAL) / MAX(c.size, 1) DESC, c.cid`)
      .all(device).map(r => ({ ...(r as { cid: string, size: number, storedAt: number | null, liveBytes: number }), movable: (r as { movable: number }).movable === 1 }))
  }

  /** The live blobs of a content object, by offset: the file, where it lies, how long. */
  liveBlobs (object: string): Array<{ file: string, offset: number, length: number }> {
    return this.db.prepare('SELECT DISTINCT file, offset, length FROM newest WHERE object = ? AND length IS NOT NULL ORDER BY offset, file').all(object) as Array<{ file: string, offset: number, length: number }>
  }

  live (cids: Iterable<string>): void {
    this.db.transaction(() => { for (const cid of cids) this.addLive.run(cid) })()
  }

  /** Objects that may go; `rank` orders manifests oldest first (a rerun can still walk what is left). */
  candidates (cids: Iterable<string>, kind: CandidateKind, rank = 0): void {
    this.db.transaction(() => { for (const cid of cids) this.addCandidate.run(cid, kind, rank) })()
  }

  /** Objects whose listing is wanted (those a killed prune was deleting): {@link unlisted} answers which the store lacks. */
  watch (cids: Iterable<string>): void {
    const add = this.db.prepare('INSERT INTO watched (cid) VALUES (?) ON CONFLICT DO NOTHING')
    this.db.transaction(() => { for (const cid of cids) { add.run(cid); this.watching = true } })()
  }

  /** Notes what the store lists of a candidate: its size and when it was stored. */
  listed (cid: string, size: number, storedAt: number | undefined): void {
    this.noteListed.run(size, storedAt ?? null, cid)
    if (this.watching) this.noteWatched.run(cid)
  }

  /** Notes one upload the store's listing holds (a store that lists uploads by id tells each). */
  upload (cid: string, upload: StoredUpload): void {
    this.noteUpload.run({ cid, id: upload.id, at: upload.storedAt ?? null })
  }

  /** The uploads noted of each of `cids` that the listing held: what a delete may take. */
  uploadsOf (cids: readonly string[]): Map<string, StoredUpload[]> {
    const found = new Map<string, StoredUpload[]>()
    for (const cid of cids) {
      const rows = this.uploadsOfCid.all(cid) as Array<{ id: string, stored_at: number | null }>
      if (rows.length > 0) found.set(cid, rows.map(r => r.stored_at === null ? { id: r.id } : { id: r.id, storedAt: r.stored_at }))
    }
    return found
  }

  /** The watched objects the store's listing did not hold. */
  unlisted (): string[] {
    return this.db.prepare('SELECT cid FROM watched WHERE listed = 0 ORDER BY cid').pluck().all() as string[]
  }

  /**
   * The candidates to delete, in order (plain roots, content, segments, manifests oldest first): listed by the
   * store, no kept publish needing them, stored before `before` (ms).
   */
  dead (before: number): Array<{ cid: string, kind: CandidateKind, size: number }> {
    return this.db.prepare(`SELECT cid, kind, size FROM candidates WHERE size IS NOT NULL AND stored_at IS NOT NULL AND stored_at < ?
      AND cid NOT IN (SELECT cid FROM live) ORDER BY CASE kind WHEN 'root' THEN 0 WHEN 'content' THEN 1 WHEN 'segment' THEN 2 ELSE 3 END, rank DESC, cid`).all(before) as Array<{ cid: string, kind: CandidateKind, size: number }>
  }

  /** Of the candidates `cids`, those a kept publish needs or the store did not list: nothing is left to delete of them. */
  settled (cids: readonly string[]): string[] {
    if (cids.length === 0) return []
    return this.db.prepare(`SELECT c.cid FROM candidates c WHERE c.cid IN (SELECT value FROM json_each(?))
      AND (c.size IS NULL OR c.cid IN (SELECT cid FROM live)) ORDER BY c.cid`).pluck().all(JSON.stringify(cids)) as string[]
  }

  /** Candidates no kept publish needs that are too young to delete: counted, never deleted. */
  young (before: number): number {
    return this.db.prepare('SELECT COUNT(*) FROM candidates WHERE size IS NOT NULL AND (stored_at IS NULL OR stored_at >= ?) AND cid NOT IN (SELECT cid FROM live)').pluck().get(before) as number
  }

  close (): void {
    this.db.close()
    for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(`${this.path}${suffix}`, { force: true })
  }
}
