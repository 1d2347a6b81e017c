import type { Database, Statement } from 'better-sqlite3'
import { InternalError } from '../errors.js'
import { Interned } from '../util/interned.js'
import { META_COLUMNS, metaOfRow, metaValues, type FileMeta, type MetaRow } from './file-meta.js'

/** A file as one device last saw it. */
export interface Entry {
  readonly deviceId: string
  readonly folder: string
  /** Relative to the folder, `/`-separated. */
  readonly path: string
  readonly size: number
  readonly mtimeMs: number
  readonly cid: string | null
  readonly cidProfile: string
  readonly updatedAt: number
  readonly deleted: boolean
  readonly seq: number
  /** What it is (type, mode, owner, link target); null in a row from before these were recorded. */
  readonly meta: FileMeta | null
}

/** A row as the scan compares it: what it is, beside its size and mtime (its CID is not read: most rows are unchanged). */
export type KnownRow = readonly [path: string, size: number, mtimeMs: number, cidProfile: string, kind: string | null, mode: number | null, uid: number | null, gid: number | null, target: string | null, linkGroup: string | null]

/** What the scanner compares against: enough to tell whether a file needs hashing again. */
export interface KnownFile {
  readonly size: number
  readonly mtimeMs: number
  readonly cidProfile: string
  readonly meta: FileMeta | null
  /** Its CID, where the lookup read it (a change of mode alone keeps it). */
  readonly cid?: string | null
}

/** One write of this device's own view of a file. */
export type EntryChange =
  | { readonly kind: 'upsert', readonly folder: string, readonly path: string, readonly size: number, readonly mtimeMs: number, readonly cid: string | null, readonly cidProfile: string, readonly meta?: FileMeta }
  | { readonly kind: 'delete', readonly folder: string, readonly path: string }

export interface KnownDevice { readonly id: string, readonly hostname: string | null, readonly lastSeq: number }

export interface FolderTotals { readonly folder: string, readonly files: number, readonly bytes: number }

export interface ListOptions {
  /** Matches the start of `folder/path`. */
  readonly prefix?: string
  /** Only this device's entries; all devices when absent. */
  readonly deviceId?: string
  readonly includeDeleted?: boolean
  /** Directories' rows too (paths ending with `/`): absent, files and symlinks alone. */
  readonly dirs?: boolean
}

interface EntryRow extends MetaRow {
  device_id: string, folder: string, path: string, size: number, mtime_ms: number, cid: string | null,
  cid_profile: string, updated_at: number, deleted: number, seq: number
}

/** Whether the index keeps `live_counts` (schema 5+); a read-only connection to an older one counts instead. */
export function hasLiveCounts (db: Database): boolean {
  return db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'live_counts'").pluck().get() === 1
}

// A tree of a million rows names a few devices, folders and profiles: each held once.
const repeated = new Interned()

const toEntry = (r: EntryRow): Entry => ({
  deviceId: repeated.of(r.device_id), folder: repeated.of(r.folder), path: r.path, size: r.size, mtimeMs: r.mtime_ms, cid: r.cid,
  cidProfile: repeated.of(r.cid_profile), updatedAt: r.updated_at, deleted: r.deleted === 1, seq: r.seq, meta: metaOfRow(r)
})

/**
 * The entries table. Statements are prepared once; every batch of writes is one transaction that
 * stamps each change with the next sequence number of the writing device.
 */
export class EntryStore {
  private readonly writes?: {
    ensureDevice: Statement, lastSeq: Statement, setSeq: Statement, insertOrRevive: Statement, updateLive: Statement, tombstone: Statement, addLive: Statement
  }

  private readonly reads: { known: Statement, knownOne: Statement, livePaths: Statement, totals: Statement, list: Statement, get: Statement, devices: Statement }

  /** Prepared on first use: a read-only connection to an index older than `live_counts` counts instead. */
  private liveCountRead?: Statement

  /** The database file, for threads that open their own read-only connection. */
  readonly path: string

  constructor (private readonly db: Database, readonly: boolean) {
    this.path = db.name
    if (!readonly) {
      this.writes = {
        ensureDevice: db.prepare('INSERT INTO devices (device_id, hostname, first_seen) VALUES (?, ?, ?) ON CONFLICT (device_id) DO UPDATE SET hostname = excluded.hostname'),
        lastSeq: db.prepare('SELECT last_seq FROM devices WHERE device_id = ?').pluck(),
        setSeq: db.prepare('UPDATE devices SET last_seq = ? WHERE device_id = ?'),
        // An upsert in two statements so that it tells whether a row became live (live_counts):
        // a new or dead row is written by the first (1 change: one more live), a live one by the
        // second (a row it does not change is new or dead). `apply` tries first the one that
        // served the previous upsert of the batch: a batch of new files (the cold index) or of
        // changed ones costs one statement a file, as before.
        insertOrRevive: db.prepare(`INSERT INTO entries (device_id, folder, path, size, mtime_ms, cid, cid_profile, updated_at, deleted, seq, ${META_COLUMNS})
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)
          ON CONFLICT (device_id, folder, path) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms, cid = excluded.cid,
            cid_profile = excluded.cid_profile, updated_at = excluded.updated_at, deleted = 0, seq = excluded.seq,
            kind = excluded.kind, mode = excluded.mode, uid = excluded.uid, gid = excluded.gid, owner = excluded.owner,
            grp = excluded.grp, target = excluded.target, link_group = excluded.link_group
          WHERE entries.deleted != 0`),
        updateLive: db.prepare(`UPDATE entries SET size = ?, mtime_ms = ?, cid = ?, cid_profile = ?, updated_at = ?, seq = ?,
            kind = ?, mode = ?, uid = ?, gid = ?, owner = ?, grp = ?, target = ?, link_group = ?
          WHERE device_id = ? AND folder = ? AND path = ? AND deleted = 0`),
        tombstone: db.prepare('UPDATE entries SET deleted = 1, updated_at = ?, seq = ? WHERE device_id = ? AND folder = ? AND path = ? AND deleted = 0'),
        addLive: db.prepare('INSERT INTO live_counts (device_id, live) VALUES (?, ?) ON CONFLICT (device_id) DO UPDATE SET live = live + excluded.live')
      }
    }
    this.reads = {
      // In the primary key's order (path's UTF-8 bytes), from after a path: a seek, never a sort.
      known: db.prepare('SELECT path, size, mtime_ms, cid_profile, kind, mode, uid, gid, target, link_group FROM entries WHERE device_id = ? AND folder = ? AND path > ? AND deleted = 0 ORDER BY path LIMIT ?').raw(),
      knownOne: db.prepare(`SELECT size, mtime_ms, cid_profile, cid, ${META_COLUMNS} FROM entries WHERE device_id = ? AND folder = ? AND path = ? AND deleted = 0`),
      livePaths: db.prepare('SELECT path FROM entries WHERE device_id = ? AND folder = ? AND deleted = 0').pluck(),
      // Directories and symlinks are entries, not files: a folder's totals count files alone.
      totals: db.prepare("SELECT folder, COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes FROM entries WHERE device_id = ? AND deleted = 0 AND (kind IS NULL OR kind = 'file') GROUP BY folder"),
      list: db.prepare(`SELECT * FROM entries
        WHERE (@deviceId IS NULL OR device_id = @deviceId) AND (@includeDeleted = 1 OR deleted = 0) AND (@dirs = 1 OR kind IS NOT 'dir')
          AND substr(folder || '/' || path, 1, length(@prefix)) = @prefix
        ORDER BY folder, path, device_id`),
      get: db.prepare('SELECT * FROM entries WHERE device_id = ? AND folder = ? AND path = ?'),
      devices: db.prepare('SELECT device_id AS id, hostname, last_seq AS lastSeq FROM devices ORDER BY device_id')
    }
  }

  /** Every device the index holds rows of (this one, and those merged or restored from others). */
  devices (): KnownDevice[] {
    return this.reads.devices.all() as KnownDevice[]
  }

  /** Registers this device so its rows have an owner with a sequence counter. */
  registerDevice (deviceId: string, hostname: string): void {
    this.writable().ensureDevice.run(deviceId, hostname, Date.now())
  }

  /**
   * Up to `limit` of this device's live files in a folder whose path sorts after `afterPath`, in
   * the order of the paths' UTF-8 bytes (see {@link utf8Before}). Read a page at a time, so a
   * caller walking a million rows holds neither them all nor a read transaction all along.
   */
  knownFilesAfter (deviceId: string, folder: string, afterPath: string, limit: number): KnownRow[] {
    return this.reads.known.all(deviceId, folder, afterPath, limit) as KnownRow[]
  }

  /** Paths of this device's live files in a folder, streamed (run no other statement meanwhile). */
  livePaths (deviceId: string, folder: string): IterableIterator<string> {
    return this.reads.livePaths.iterate(deviceId, folder) as IterableIterator<string>
  }

  /**
   * Writes a batch in one transaction. Answers how many rows changed; only those take a sequence
   * number (a delete of something not indexed changes nothing).
   */
  apply (deviceId: string, changes: readonly EntryChange[]): number {
    const writes = this.writable()
    if (changes.length === 0) return 0
    return this.db.transaction(() => {
      const now = Date.now()
      const last = writes.lastSeq.get(deviceId) as number | undefined
      if (last === undefined) throw new InternalError(`device ${deviceId} is not registered in the index`)
      let seq = last
      let live = 0
      let updating = false
      for (const change of changes) {
        const next = seq + 1
        // Positional parameters: binding by name costs twice as much on this hot path.
        if (change.kind === 'upsert') {
          const meta = metaValues(change.meta)
          if (updating && writes.updateLive.run(change.size, change.mtimeMs, change.cid, change.cidProfile, now, next, ...meta, deviceId, change.folder, change.path).changes > 0) {
            // A live row changed: no count moves.
          } else if (writes.insertOrRevive.run(deviceId, change.folder, change.path, change.size, change.mtimeMs, change.cid, change.cidProfile, now, next, ...meta).changes > 0) {
            live++
            updating = false
          } else {
            writes.updateLive.run(change.size, change.mtimeMs, change.cid, change.cidProfile, now, next, ...meta, deviceId, change.folder, change.path)
            updating = true
          }
          seq = next
        } else if (writes.tombstone.run(now, next, deviceId, change.folder, change.path).changes > 0) {
          live--
          seq = next
        }
      }
      writes.setSeq.run(seq, deviceId)
      if (live !== 0) writes.addLive.run(deviceId, live)
      return seq - last
    }).immediate()
  }

  /** How many live files one device has, in all folders. */
  liveCount (deviceId: string): number {
    this.liveCountRead ??= this.db.prepare(hasLiveCounts(this.db)
      ? 'SELECT COALESCE((SELECT live FROM live_counts WHERE device_id = ?), 0)'
      : 'SELECT COUNT(*) FROM entries WHERE device_id = ? AND deleted = 0').pluck()
    return this.liveCountRead.get(deviceId) as number
  }

  /**
   * Counts every device's live rows again into `live_counts` (one scan): for rows written behind
   * the store's back (the benchmarks fill the index in SQL). Nothing else needs it.
   */
  recountLive (): void {
    this.writable()
    this.db.transaction(() => {
      this.db.exec('DELETE FROM live_counts')
      this.db.exec('INSERT INTO live_counts (device_id, live) SELECT device_id, COUNT(*) FROM entries WHERE deleted = 0 GROUP BY device_id')
    }).immediate()
  }

  /** Live files and bytes per folder of one device. */
  totals (deviceId: string): FolderTotals[] {
    return this.reads.totals.all(deviceId) as FolderTotals[]
  }

  list (options: ListOptions = {}): Entry[] {
    return (this.reads.list.all({ deviceId: options.deviceId ?? null, includeDeleted: options.includeDeleted === true ? 1 : 0, dirs: options.dirs === true ? 1 : 0, prefix: options.prefix ?? '' }) as EntryRow[]).map(toEntry)
  }

  /** One live file's size, mtime and profile: the cheap lookup for checking a file against its row. */
  knownFile (deviceId: string, folder: string, path: string): KnownFile | undefined {
    const row = this.reads.knownOne.get(deviceId, folder, path) as (MetaRow & { size: number, mtime_ms: number, cid_profile: string, cid: string | null }) | undefined
    return row === undefined ? undefined : { size: row.size, mtimeMs: row.mtime_ms, cidProfile: row.cid_profile, meta: metaOfRow(row), cid: row.cid }
  }

  /**
   * A device's rows written after `afterSeq`, tombstones too, in sequence order, streamed (run no other statement of
   * this connection meanwhile): what a copy kept of the index (the search cache) needs to catch up.
   * Read by sequence (`entries_by_seq`), so a few new rows cost a few reads.
   */
  rowsSince (deviceId: string, afterSeq: number): IterableIterator<Entry> {
    this.sinceRead ??= this.db.prepare('SELECT * FROM entries WHERE device_id = ? AND seq > ? ORDER BY seq')
    const rows = this.sinceRead.iterate(deviceId, afterSeq) as IterableIterator<EntryRow>
    return (function * () { for (const row of rows) yield toEntry(row) })()
  }

  private sinceRead: Statement | undefined

  get (deviceId: string, folder: string, path: string): Entry | undefined {
    const row = this.reads.get.get(deviceId, folder, path) as EntryRow | undefined
    return row === undefined ? undefined : toEntry(row)
  }

  private writable (): NonNullable<EntryStore['writes']> {
    if (this.writes === undefined) throw new InternalError('the index was opened read-only')
    return this.writes
  }
}

const HIGH_UNIT = /[\uD800-\uFFFF]/

/**
 * Whether `a` sorts before `b` in the order of their UTF-8 bytes, SQLite's order of TEXT: the
 * order of code points. JavaScript's `<` compares UTF-16 units, which differs only when both
 * strings differ first at units from U+D800 up (a character past U+FFFF against one from U+E000).
 */
export function utf8Before (a: string, b: string): boolean {
  // The common case, and the cheap one: `<` is right whenever either string has no such unit.
  if (!HIGH_UNIT.test(a) || !HIGH_UNIT.test(b)) return a < b
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    if (x < 0xD800 || y < 0xD800) return x < y
    return (a.codePointAt(i) as number) < (b.codePointAt(i) as number)
  }
  return a.length < b.length
}
