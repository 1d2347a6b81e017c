import { writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import type { Database as Db, Statement } from 'better-sqlite3'
import { SnapshotFormatError, SnapshotIntegrityError } from '../errors.js'
import { openDatabase } from './open.js'
import { CONTENT_SCHEMA_VERSION, SCHEMA_VERSION } from './migrations.js'
import { segmentSchemaProblems } from './segment-schema.js'
import { hasLiveCounts } from './entries.js'
import { CONTENT_COLUMNS } from './content-records.js'

/** Which rows of one device a segment holds (docs/snapshot-format.md). */
export interface SegmentRange {
  readonly deviceId: string
  /** A base holds the device's rows at `to` (tombstones too: a restore is exact); a delta every row written in `(from, to]`. */
  readonly kind: 'base' | 'delta'
  readonly from: number
  readonly to: number
}

/** The segment list that rebuilds the rows this index holds of a device, as the sync room wrote it. */
export interface RecordedChain {
  readonly deviceId: string
  /** The sequence the list ends at: it describes this index's rows only while it equals the device's `last_seq`. */
  readonly toSeq: number
  /** The list, as JSON (the sync room's to read). */
  readonly segments: string
}

/** A device as this index knows it. */
export interface DeviceState { readonly deviceId: string, readonly hostname: string, readonly firstSeen: number, readonly lastSeq: number }

/** One device's rows arriving from segments already fetched, opened and checked (`checkSegment`). */
export interface IncomingDevice {
  readonly deviceId: string
  readonly hostname: string
  readonly firstSeen: number
  readonly lastSeq: number
  /** The rows are replaced whole (the files start with a base), or the deltas are applied on top. */
  readonly replace: boolean
  /** Segment databases, in order. */
  readonly files: readonly string[]
  readonly chain: RecordedChain
}

const COLUMNS = 'device_id, folder, path, size, mtime_ms, cid, cid_profile, updated_at, deleted, seq'

/**
 * The index's side of `cidsync-sqlite/2`: cutting one device's rows into a segment database,
 * checking one, applying them, and the table of segment lists (`segment_chains`, never in a
 * segment's rows). Statements are prepared once.
 */
export class SegmentStore {
  private prepared?: {
    chains: Statement, setChain: Statement, forgetChain: Statement, lastSeq: Statement, devices: Statement, live: Statement
  }

  constructor (private readonly db: Db) {}

  /** Prepared on first use (once): a read-only connection to an older index never needs them. */
  private get statements (): NonNullable<SegmentStore['prepared']> {
    const db = this.db
    this.prepared ??= {
      chains: db.prepare('SELECT device_id AS deviceId, to_seq AS toSeq, segments FROM segment_chains'),
      setChain: db.prepare('INSERT INTO segment_chains (device_id, to_seq, segments) VALUES (?, ?, ?) ON CONFLICT (device_id) DO UPDATE SET to_seq = excluded.to_seq, segments = excluded.segments'),
      forgetChain: db.prepare('DELETE FROM segment_chains WHERE device_id = ?'),
      lastSeq: db.prepare('SELECT last_seq FROM devices WHERE device_id = ?').pluck(),
      devices: db.prepare('SELECT device_id AS deviceId, hostname, first_seen AS firstSeen, last_seq AS lastSeq FROM devices ORDER BY device_id'),
      live: db.prepare(hasLiveCounts(db) ? 'SELECT COALESCE(SUM(live), 0) FROM live_counts' : 'SELECT COUNT(*) FROM entries WHERE deleted = 0').pluck()
    }
    return this.prepared
  }

  /** Every device this index holds rows of, with its sequence. */
  devices (): DeviceState[] {
    return this.statements.devices.all() as DeviceState[]
  }

  /** Live rows of every device (kept in `live_counts`, not counted): what a manifest's `entries` and the pointer's `memories` say. */
  liveEntries (): number {
    return this.statements.live.get() as number
  }

  /** Every recorded segment list. */
  chains (): RecordedChain[] {
    return this.statements.chains.all() as RecordedChain[]
  }

  /** Records the lists a publish made (after its pointer PUT held), one transaction. */
  recordChains (chains: readonly RecordedChain[]): void {
    this.db.transaction(() => {
      for (const chain of chains) this.statements.setChain.run(chain.deviceId, chain.toSeq, chain.segments)
    }).immediate()
  }

  /**
   * Writes the rows of `range` into a new segment database at `path` (the index schema, that
   * device's row in `devices` with `last_seq = to`, nothing else). Synchronous, so no write of
   * this process lands between reading the device's sequence and copying its rows.
   */
  writeSegment (path: string, range: SegmentRange, device: { readonly hostname: string, readonly firstSeen: number }): { readonly entries: number } {
    writeFileSync(path, '', { mode: 0o600, flag: 'wx' })
    // The oldest schema that holds its rows (docs/content-format.md, "Older cidsync"): a segment
    // without content records stays readable by a cidsync from before them.
    const withContent = this.db.prepare(range.kind === 'base'
      ? 'SELECT EXISTS (SELECT 1 FROM main.content WHERE device_id = ? AND seq <= ?)'
      : 'SELECT EXISTS (SELECT 1 FROM main.content WHERE device_id = ? AND seq > ? AND seq <= ?)').pluck()
      .get(...(range.kind === 'base' ? [range.deviceId, range.to] : [range.deviceId, range.from, range.to])) === 1
    openDatabase(path, { check: false, schemaVersion: withContent ? SCHEMA_VERSION : CONTENT_SCHEMA_VERSION - 1 }).close()
    // Back to a rollback journal: the file must be whole by itself when it is sealed and when it is restored.
    const fresh = new Database(path)
    fresh.pragma('journal_mode = DELETE')
    fresh.close()
    // A delta reads its rows by sequence; an index restored from a segment file (which leaves the
    // index out, keeping bases small) gets it back here, once.
    if (range.kind === 'delta') this.db.exec('CREATE INDEX IF NOT EXISTS main.entries_by_seq ON entries (device_id, seq)')
    this.db.prepare('ATTACH DATABASE ? AS segment').run(path)
    try {
      this.db.exec('DROP INDEX IF EXISTS segment.entries_by_seq')
      this.db.pragma('segment.journal_mode = OFF')
      this.db.pragma('segment.synchronous = OFF')
      return this.db.transaction(() => {
        this.db.prepare('INSERT INTO segment.devices (device_id, hostname, first_seen, last_seq) VALUES (?, ?, ?, ?)').run(range.deviceId, device.hostname, device.firstSeen, range.to)
        // A base of the only device the index holds rows of: every row, copied page by page
        // (SQLite's transfer optimization, as VACUUM INTO does; no WHERE), not row by row.
        const alone = range.kind === 'base' && this.db.prepare('SELECT EXISTS (SELECT 1 FROM main.entries WHERE device_id < ?) OR EXISTS (SELECT 1 FROM main.entries WHERE device_id > ?)').pluck().get(range.deviceId, range.deviceId) === 0
        const copied = alone
          ? this.db.prepare('INSERT INTO segment.entries SELECT * FROM main.entries').run()
          : range.kind === 'base'
            ? this.db.prepare(`INSERT INTO segment.entries (${COLUMNS}) SELECT ${COLUMNS} FROM main.entries WHERE device_id = ? AND seq <= ?`).run(range.deviceId, range.to)
            : this.db.prepare(`INSERT INTO segment.entries (${COLUMNS}) SELECT ${COLUMNS} FROM main.entries WHERE device_id = ? AND seq > ? AND seq <= ?`).run(range.deviceId, range.from, range.to)
        // The file carries its live count (a base becomes a restored index as it is): a base of
        // the device as it is now has the index's own; anything else counts its rows.
        const lastSeq = this.statements.lastSeq.get(range.deviceId) as number | undefined
        const live = range.kind === 'base' && range.to === lastSeq
          ? this.db.prepare('SELECT COALESCE((SELECT live FROM main.live_counts WHERE device_id = ?), 0)').pluck().get(range.deviceId) as number
          : this.db.prepare('SELECT COUNT(*) FROM segment.entries WHERE deleted = 0').pluck().get() as number
        if (live > 0) this.db.prepare('INSERT INTO segment.live_counts (device_id, live) VALUES (?, ?)').run(range.deviceId, live)
        // Content records travel with the rows of their device, by the same sequence range.
        if (withContent) {
          const records = range.kind === 'base'
            ? this.db.prepare(`INSERT INTO segment.content (${CONTENT_COLUMNS}) SELECT ${CONTENT_COLUMNS} FROM main.content WHERE device_id = ? AND seq <= ?`)
            : this.db.prepare(`INSERT INTO segment.content (${CONTENT_COLUMNS}) SELECT ${CONTENT_COLUMNS} FROM main.content WHERE device_id = ? AND seq > ? AND seq <= ?`)
          records.run(...(range.kind === 'base' ? [range.deviceId, range.to] : [range.deviceId, range.from, range.to]))
        }
        return { entries: copied.changes }
      })()
    } finally {
      this.db.exec('DETACH DATABASE segment')
    }
  }

  /**
   * Applies other devices' segments: for each device, its rows replaced whole or the deltas put on
   * top (later files win), its `devices` row and its recorded list, all in one transaction. `self`
   * is never among them.
   */
  applyDevices (devices: readonly IncomingDevice[]): void {
    if (devices.length === 0) return
    this.db.exec(`CREATE TEMP TABLE IF NOT EXISTS incoming AS SELECT ${COLUMNS} FROM main.entries WHERE 0`)
    this.db.exec('CREATE UNIQUE INDEX IF NOT EXISTS temp.incoming_key ON incoming (device_id, folder, path)')
    this.db.exec(`CREATE TEMP TABLE IF NOT EXISTS incoming_content AS SELECT ${CONTENT_COLUMNS} FROM main.content WHERE 0`)
    this.db.exec('CREATE UNIQUE INDEX IF NOT EXISTS temp.incoming_content_key ON incoming_content (device_id, cid)')
    try {
      for (const device of devices) {
        for (const file of device.files) {
          this.db.prepare('ATTACH DATABASE ? AS segment').run(file)
          try {
            this.db.prepare(`INSERT OR REPLACE INTO temp.incoming (${COLUMNS}) SELECT ${COLUMNS} FROM segment.entries WHERE device_id = ?`).run(device.deviceId)
            // Segments of an older schema carry no content records.
            if (this.db.prepare("SELECT 1 FROM segment.sqlite_schema WHERE type = 'table' AND name = 'content'").pluck().get() === 1) {
              this.db.prepare(`INSERT OR REPLACE INTO temp.incoming_content (${CONTENT_COLUMNS}) SELECT ${CONTENT_COLUMNS} FROM segment.content WHERE device_id = ?`).run(device.deviceId)
            }
          } finally {
            this.db.exec('DETACH DATABASE segment')
          }
        }
      }
      this.db.transaction(() => {
        for (const device of devices) {
          // Live counts from the incoming rows (a segment's own count is not needed): replaced rows
          // are theirs alone; rows put on top add theirs and take away the live ones they replace.
          const incomingLive = this.db.prepare('SELECT COUNT(*) FROM temp.incoming WHERE device_id = ? AND deleted = 0').pluck().get(device.deviceId) as number
          if (device.replace) {
            this.db.prepare('DELETE FROM main.entries WHERE device_id = ?').run(device.deviceId)
            this.db.prepare('INSERT INTO main.live_counts (device_id, live) VALUES (?, ?) ON CONFLICT (device_id) DO UPDATE SET live = excluded.live').run(device.deviceId, incomingLive)
          } else {
            const replacedLive = this.db.prepare(`SELECT COUNT(*) FROM temp.incoming i JOIN main.entries e
              ON e.device_id = i.device_id AND e.folder = i.folder AND e.path = i.path WHERE i.device_id = ? AND e.deleted = 0`).pluck().get(device.deviceId) as number
            this.db.prepare('INSERT INTO main.live_counts (device_id, live) VALUES (?, ?) ON CONFLICT (device_id) DO UPDATE SET live = live + excluded.live').run(device.deviceId, incomingLive - replacedLive)
          }
          this.db.prepare(`INSERT OR REPLACE INTO main.entries (${COLUMNS}) SELECT ${COLUMNS} FROM temp.incoming WHERE device_id = ?`).run(device.deviceId)
          if (device.replace) this.db.prepare('DELETE FROM main.content WHERE device_id = ?').run(device.deviceId)
          this.db.prepare(`INSERT OR REPLACE INTO main.content (${CONTENT_COLUMNS}) SELECT ${CONTENT_COLUMNS} FROM temp.incoming_content WHERE device_id = ?`).run(device.deviceId)
          this.db.prepare(`INSERT INTO main.devices (device_id, hostname, first_seen, last_seq) VALUES (?, ?, ?, ?)
            ON CONFLICT (device_id) DO UPDATE SET hostname = excluded.hostname, last_seq = excluded.last_seq`).run(device.deviceId, device.hostname, device.firstSeen, device.lastSeq)
          this.statements.setChain.run(device.chain.deviceId, device.chain.toSeq, device.chain.segments)
        }
      }).immediate()
    } finally {
      this.db.exec('DROP TABLE IF EXISTS temp.incoming')
      this.db.exec('DROP TABLE IF EXISTS temp.incoming_content')
    }
  }

  /**
   * Others know this device at `seenElsewhere`, above its own sequence (its index was rebuilt or
   * restored from an older point): count on from there and forget its own list, so its next
   * publish writes a base that wins its rows back.
   */
  catchUpSelf (selfDeviceId: string, seenElsewhere: number): boolean {
    return this.db.transaction(() => {
      const mine = (this.statements.lastSeq.get(selfDeviceId) as number | undefined) ?? 0
      if (seenElsewhere < mine) return false
      this.db.prepare('UPDATE devices SET last_seq = ? WHERE device_id = ?').run(seenElsewhere + 1, selfDeviceId)
      this.statements.forgetChain.run(selfDeviceId)
      return true
    }).immediate()
  }

  /**
   * Compares this index's rows of a device with another index's (a restore drill's result), as far
   * as `seenUpTo` (default: the other index's sequence for it): rows written here since are not
   * expected there. Null when the other index does not know the device. Answers how many were compared
   * and how many differ, with the first that does.
   */
  compareDevice (otherPath: string, deviceId: string, seenUpTo?: number): { readonly compared: number, readonly differing: number, readonly first: string | null } | null {
    this.db.prepare('ATTACH DATABASE ? AS drill').run(otherPath)
    try {
      const upToSeq = seenUpTo ?? this.db.prepare('SELECT last_seq FROM drill.devices WHERE device_id = ?').pluck().get(deviceId) as number | undefined
      if (upToSeq === undefined) return null
      const missingThere = this.db.prepare(`SELECT folder || '/' || path FROM main.entries l WHERE l.device_id = ? AND l.seq <= ? AND l.deleted = 0
        AND NOT EXISTS (SELECT 1 FROM drill.entries r WHERE r.device_id = l.device_id AND r.folder = l.folder AND r.path = l.path AND r.seq = l.seq AND r.deleted = 0 AND r.cid IS l.cid AND r.size = l.size)`).pluck()
      const extraThere = this.db.prepare(`SELECT folder || '/' || path FROM drill.entries r WHERE r.device_id = ? AND r.deleted = 0
        AND NOT EXISTS (SELECT 1 FROM main.entries l WHERE l.device_id = r.device_id AND l.folder = r.folder AND l.path = r.path AND (l.seq > ? OR l.seq = r.seq))`).pluck()
      const differing = [...missingThere.all(deviceId, upToSeq), ...extraThere.all(deviceId, upToSeq)] as string[]
      const compared = this.db.prepare('SELECT COUNT(*) FROM drill.entries WHERE device_id = ? AND deleted = 0').pluck().get(deviceId) as number
      return { compared, differing: differing.length, first: differing[0] ?? null }
    } finally {
      this.db.exec('DETACH DATABASE drill')
    }
  }

}

/**
 * A query answering the first row (as `folder/path`) naming no plain relative path (empty,
 * absolute, `.`/`..`/empty components, a NUL), or whose folder is no single name: what the
 * walker never writes, and what must never become a path on disk. LIKE's `%` only; none of these
 * characters has a case.
 */
export const UNSAFE_PATHS = `SELECT folder || '/' || path FROM entries WHERE
  path = '' OR path LIKE '/%' OR path LIKE '%/' OR path LIKE '%//%' OR instr(path, char(0)) > 0
  OR path IN ('.', '..') OR path LIKE './%' OR path LIKE '../%' OR path LIKE '%/.' OR path LIKE '%/..' OR path LIKE '%/./%' OR path LIKE '%/../%'
  OR folder IN ('', '.', '..') OR instr(folder, '/') > 0 OR instr(folder, char(0)) > 0
  LIMIT 1`

/**
 * Checks a segment database against what its sealed header and the manifest say: SQLite's quick
 * check, a schema this cidsync knows, only that device's rows, sequences inside the range, the
 * count as announced. A failure names the segment.
 */
export function checkSegment (path: string, range: SegmentRange & { readonly entries: number }, name: string): void {
  let db: Db | undefined
  try {
    db = openDatabase(path, { readonly: true, check: false })
    const quick = db.pragma('quick_check(1)', { simple: true })
    if (quick !== 'ok') throw new SnapshotIntegrityError(`segment ${name} holds a damaged database (quick_check: ${String(quick)})`)
    const found = db.prepare('SELECT COUNT(*) AS rows, SUM(device_id != ?) AS foreign_rows, MIN(seq) AS low, MAX(seq) AS high, COALESCE(SUM(deleted = 0), 0) AS live FROM entries').get(range.deviceId) as { rows: number, foreign_rows: number | null, low: number | null, high: number | null, live: number }
    const problems: string[] = segmentSchemaProblems(db, range.deviceId, range.to)
    // A segment of schema 5+ carries its live count (a base becomes a restored index as it is).
    if (hasLiveCounts(db)) {
      const carried = db.prepare('SELECT COALESCE(SUM(live), 0) FROM live_counts').pluck().get() as number
      if (carried !== found.live) problems.push(`a live count of ${carried} where it holds ${found.live} live rows`)
    }
    if (found.rows !== range.entries) problems.push(`${found.rows} rows where ${range.entries} were announced`)
    // A row's folder/path becomes a path on disk (restore --files, storing after a restore): none may climb out.
    const unsafe = db.prepare(UNSAFE_PATHS).pluck().get() as string | undefined
    if (unsafe !== undefined) problems.push(`a row whose path is not inside its folder (${JSON.stringify(unsafe.slice(0, 200))})`)
    if ((found.foreign_rows ?? 0) > 0) problems.push(`${found.foreign_rows ?? 0} rows of another device`)
    if (found.low !== null && found.low <= (range.kind === 'base' ? -1 : range.from)) problems.push(`a row at sequence ${found.low}, not after ${range.from}`)
    if (found.high !== null && found.high > range.to) problems.push(`a row at sequence ${found.high}, past ${range.to}`)
    if (db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'content'").pluck().get() === 1) {
      const content = db.prepare('SELECT SUM(device_id != ?) AS foreign_rows, MIN(seq) AS low, MAX(seq) AS high FROM content').get(range.deviceId) as { foreign_rows: number | null, low: number | null, high: number | null }
      if ((content.foreign_rows ?? 0) > 0) problems.push(`${content.foreign_rows ?? 0} content records of another device`)
      if (content.low !== null && content.low <= (range.kind === 'base' ? -1 : range.from)) problems.push(`a content record at sequence ${content.low}, not after ${range.from}`)
      if (content.high !== null && content.high > range.to) problems.push(`a content record at sequence ${content.high}, past ${range.to}`)
    }
    if (problems.length > 0) throw new SnapshotIntegrityError(`segment ${name} does not hold what it says: ${problems.join(', ')}`)
  } catch (err) {
    if (err instanceof SnapshotIntegrityError || err instanceof SnapshotFormatError) throw err
    const schema = /newer/.test((err as Error).message) ? ` (it needs schema ${SCHEMA_VERSION}+: upgrade cidsync)` : ''
    throw new SnapshotIntegrityError(`segment ${name} cannot be read as a database${schema}: ${(err as Error).message}`, { cause: err })
  } finally {
    db?.close()
  }
}
