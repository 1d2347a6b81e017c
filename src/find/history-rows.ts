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
  CREATE TABLE IF NOT EXISTS publish_links (cid TEXT PRIMARY KEY, previous TEXT) STRICT;
  CREATE TABLE IF NOT EXISTS publish_seqs (cid TEXT NOT NULL, device_id TEXT NOT NULL, last_seq INTEGER NOT NULL, PRIMARY KEY (cid, device_id)) STRICT, WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS cache_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
`

/** Links followed from the head at most: far past any history (`MAX_HISTORY` of sync/read). */
const MAX_CHAIN = 1_000_000

/** A publish walked, as the cache keeps it: its link back, and each device's sequence it holds rows up to. */
export interface PublishSeen {
  readonly cid: string
  readonly at: string
  readonly device: string
  /** False for a `/1` snapshot, which has no segments to read versions from. */
  readonly readable: boolean
  readonly previous: string | null
  readonly seqs: ReadonlyArray<readonly [deviceId: string, lastSeq: number]>
}

/** Which chain a head was walked for: a namespace and network, read from the primary or a mirror (`from`). */
export function historyChainKey (namespace: string, network: string, from = ''): string {
  return JSON.stringify([from, namespace, network])
}

/**
 * The publishes of the chain last walked: which versions they hold. A version is held when a
 * publish's sequence for its device falls between it and that device's next version of the path.
 */
export interface KeptChain {
  readonly publishes: number
  held: (deviceId: string, seq: number, nextSeq: number | undefined) => boolean
  /**
   * Whether a publish of the chain holds the device's rows up to `seq` or past it. A version it does
   * not reach is newer than the chain's head (a mirror behind, a pointer set back): not forgotten.
   */
  reaches: (deviceId: string, seq: number) => boolean
}

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
    // Publishes noted by an older cidsync have no links: walked again, so the kept chain can be followed.
    this.db.exec('DELETE FROM publishes_seen WHERE cid NOT IN (SELECT cid FROM publish_links)')
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

  /**
   * Publishes whose every segment is taken, walked back from `head`, the pointer's publish: the
   * chain from it is what {@link keptChain} answers from then on.
   */
  notePublishes (publishes: readonly PublishSeen[], head: string, chain: string): void {
    const put = this.db.prepare('INSERT OR IGNORE INTO publishes_seen (cid, at, device, readable) VALUES (?, ?, ?, ?)')
    const link = this.db.prepare('INSERT OR REPLACE INTO publish_links (cid, previous) VALUES (?, ?)')
    const seq = this.db.prepare('INSERT OR REPLACE INTO publish_seqs (cid, device_id, last_seq) VALUES (?, ?, ?)')
    this.db.transaction(() => {
      for (const p of publishes) {
        put.run(p.cid, p.at, p.device, p.readable ? 1 : 0)
        link.run(p.cid, p.previous)
        for (const [device, last] of p.seqs) seq.run(p.cid, device, last)
      }
      this.db.prepare('INSERT OR REPLACE INTO cache_meta (key, value) VALUES (?, ?)').run(`head ${chain}`, head)
    }).immediate()
  }

  /** The head last walked for `chain` (see {@link historyChainKey}). */
  head (chain: string): string | undefined {
    return this.db.prepare('SELECT value FROM cache_meta WHERE key = ?').pluck().get(`head ${chain}`) as string | undefined
  }

  /**
   * The publishes from `head` back, each once, or undefined where the chain cannot be followed
   * whole: a link missing, or a loop (a damaged or forged cache).
   */
  chainFrom (head: string): string[] | undefined {
    // UNION, not UNION ALL: a publish met twice (a looping chain a damaged or forged cache holds)
    // ends the walk instead of being counted again up to the bound.
    const chain = this.db.prepare(`WITH RECURSIVE chain (cid) AS (
        SELECT ? UNION SELECT l.previous FROM chain c JOIN publish_links l ON l.cid = c.cid WHERE l.previous IS NOT NULL LIMIT ?)
      SELECT c.cid, l.cid IS NOT NULL AS linked, l.previous IS NULL AS first FROM chain c LEFT JOIN publish_links l ON l.cid = c.cid`).all(head, MAX_CHAIN) as Array<{ cid: string, linked: number, first: number }>
    // Followed whole: every publish linked, and the walk ended at the chain's first (no loop).
    if (chain.some(c => c.linked === 0) || !chain.some(c => c.first === 1)) return undefined
    return chain.map(c => c.cid)
  }

  /**
   * The chain from the head last walked for `chain`, as the pointer held it then: a forget since
   * drops the publishes it forgot. Undefined before any walk, or where it cannot be followed whole.
   */
  keptChain (chain: string): KeptChain | undefined {
    const head = this.head(chain)
    const cids = head === undefined ? undefined : this.chainFrom(head)
    if (cids === undefined) return undefined
    const seqs = new Map<string, number[]>()
    const rows = this.db.prepare('SELECT device_id, last_seq FROM publish_seqs WHERE cid IN (SELECT value FROM json_each(?)) ORDER BY device_id, last_seq')
      .all(JSON.stringify(cids)) as Array<{ device_id: string, last_seq: number }>
    for (const r of rows) {
      const list = seqs.get(r.device_id) ?? []
      list.push(r.last_seq)
      seqs.set(r.device_id, list)
    }
    return {
      publishes: cids.length,
      reaches: (deviceId, seq) => ((seqs.get(deviceId) ?? []).at(-1) ?? -Infinity) >= seq,
      held: (deviceId, seq, nextSeq) => {
        const list = seqs.get(deviceId)
        if (list === undefined) return false
        // The first sequence a publish holds at or past `seq`: held when it comes before the next version.
        let low = 0
        let high = list.length
        while (low < high) {
          const mid = (low + high) >> 1
          if ((list[mid] as number) < seq) low = mid + 1
          else high = mid
        }
        return low < list.length && (nextSeq === undefined || (list[low] as number) < nextSeq)
      }
    }
  }

  /** How many publishes and segments are kept locally. */
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
