import type Database from 'better-sqlite3'
import { CID } from 'multiformats/cid'
import type { BlockStore } from './blocks.js'
import { IDENTITY, linkKind, linksOf } from './reclaim-links.js'

/** Nodes read at once while marking, into one buffer of {@link WALK_BUFFER} (a larger node gets its own). */
const WALK_BATCH = 32
const WALK_BUFFER = 4 * 1024 * 1024
/** Roots taken into the walk at a time. */
const ROOT_BATCH = 1_000
/** Batches of nodes between two progress reports. */
const REPORT_EVERY = 256

const TABLES = ['reclaim_live', 'reclaim_todo', 'reclaim_walked', 'reclaim_roots', 'reclaim_deleted']

/**
 * The blocks held now: those reachable from a live upload's root, a pointer's snapshot or an IPNS
 * name's CID, through dag-pb, dag-cbor and dag-json links. Marked in temp tables of the service's
 * connection, which SQLite keeps on disk: memory holds a batch of nodes and the page cache, never
 * a set of every block. A block not stored holds nothing here; one whose links cannot be read
 * (another codec, or a dag-cbor block that does not decode) holds itself alone, and is counted.
 */
export class LiveMarks {
  /** Blocks marked live. */
  marked = 0
  /** Live blocks whose links could not be read. */
  opaque = 0
  /** The last upload (files.seq) whose root was taken. */
  private seq = 0
  private readonly markLive: Database.Statement
  private readonly queue: Database.Statement
  private readonly nextTodo: Database.Statement
  private readonly dropTodo: Database.Statement
  private readonly walked: Database.Statement
  private readonly rootsPage: Database.Statement
  private readonly dropRoots: Database.Statement
  private readonly newRoots: Database.Statement
  private readonly takeNew: Database.Statement
  private readonly lastSeq: Database.Statement

  constructor (private readonly db: Database.Database, private readonly blocks: BlockStore) {
    this.drop()
    db.exec(`CREATE TEMP TABLE reclaim_live (cid BLOB PRIMARY KEY) WITHOUT ROWID;
      CREATE TEMP TABLE reclaim_todo (cid BLOB PRIMARY KEY) WITHOUT ROWID;
      CREATE TEMP TABLE reclaim_walked (text TEXT PRIMARY KEY) WITHOUT ROWID;
      CREATE TEMP TABLE reclaim_roots (text TEXT NOT NULL);
      CREATE TEMP TABLE reclaim_deleted (seq INTEGER PRIMARY KEY);`)
    this.markLive = db.prepare('INSERT OR IGNORE INTO temp.reclaim_live (cid) VALUES (?)')
    this.queue = db.prepare('INSERT OR IGNORE INTO temp.reclaim_todo (cid) VALUES (?)')
    this.nextTodo = db.prepare('SELECT cid FROM temp.reclaim_todo LIMIT ?').pluck()
    this.dropTodo = db.prepare('DELETE FROM temp.reclaim_todo WHERE cid = ?')
    this.walked = db.prepare('INSERT OR IGNORE INTO temp.reclaim_walked (text) VALUES (?)')
    this.rootsPage = db.prepare('SELECT rowid AS at, text FROM temp.reclaim_roots ORDER BY rowid LIMIT ?')
    this.dropRoots = db.prepare('DELETE FROM temp.reclaim_roots WHERE rowid <= ?')
    // Pointers and names are few, and rewritten in place: each one's CID is compared with those walked.
    const newRoots = `SELECT cid FROM files WHERE seq > ? AND deleted_at IS NULL
      UNION ALL SELECT snapshot_cid FROM pointers WHERE snapshot_cid NOT IN (SELECT text FROM temp.reclaim_walked)
      UNION ALL SELECT cid FROM ipns_keys WHERE cid != '' AND cid NOT IN (SELECT text FROM temp.reclaim_walked)`
    this.newRoots = db.prepare(newRoots).pluck()
    this.takeNew = db.prepare(`INSERT INTO temp.reclaim_roots (text) ${newRoots}`)
    this.lastSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) FROM files').pluck()
  }

  /** Takes every root held now, and the uploads deleted by now, in one read of the database. */
  takeRoots (): void {
    this.db.transaction(() => {
      this.seq = this.lastSeq.get() as number
      this.db.prepare('INSERT INTO temp.reclaim_roots (text) SELECT cid FROM files WHERE seq <= ? AND deleted_at IS NULL').run(this.seq)
      this.db.prepare('INSERT INTO temp.reclaim_roots (text) SELECT snapshot_cid FROM pointers').run()
      this.db.prepare("INSERT INTO temp.reclaim_roots (text) SELECT cid FROM ipns_keys WHERE cid != ''").run()
      this.db.prepare('INSERT INTO temp.reclaim_deleted (seq) SELECT seq FROM files WHERE seq <= ? AND deleted_at IS NOT NULL').run(this.seq)
    }).immediate()
  }

  /** Takes the roots listed, pointed at or named since the last take; answers how many. */
  takeNewRoots (): number {
    return this.db.transaction(() => {
      const seq = this.lastSeq.get() as number
      const taken = this.takeNew.run(this.seq).changes
      this.seq = seq
      return taken
    }).immediate()
  }

  /** Whether a root is held now that no take found: asked inside a sweep's transaction. */
  hasNewRoots (): boolean {
    return this.newRoots.get(this.seq) !== undefined
  }

  /** Marks every block reachable from the roots taken; `onMarked` hears how many are marked, now and then. */
  async walk (signal?: AbortSignal, onMarked?: (marked: number) => void): Promise<void> {
    const buffer = Buffer.allocUnsafe(WALK_BUFFER)
    for (;;) {
      signal?.throwIfAborted()
      const page = this.rootsPage.all(ROOT_BATCH) as Array<{ at: number, text: string }>
      if (page.length === 0) return
      this.db.transaction(() => {
        for (const { text } of page) {
          if (this.walked.run(text).changes === 0) continue
          let cid: CID
          try {
            cid = CID.parse(text)
          } catch {
            continue // not a CID: it names no block
          }
          this.mark(cid)
        }
        this.dropRoots.run((page[page.length - 1] as { at: number }).at)
      }).immediate()
      await this.walkNodes(buffer, signal, onMarked)
      onMarked?.(this.marked)
    }
  }

  private async walkNodes (buffer: Buffer, signal?: AbortSignal, onMarked?: (marked: number) => void): Promise<void> {
    for (let batches = 1; ; batches++) {
      signal?.throwIfAborted()
      const keys = this.nextTodo.all(WALK_BATCH) as Uint8Array[]
      if (keys.length === 0) return
      const cids = keys.map(key => CID.decode(key))
      const found = await this.blocks.getRun(cids, buffer)
      // Decoded before the next read: the views are of `buffer`.
      this.db.transaction(() => {
        for (const key of keys) this.dropTodo.run(key)
        cids.forEach((cid, i) => {
          const bytes = found[i]
          if (bytes !== undefined) this.markLinks(cid, bytes)
        })
      }).immediate()
      if (batches % REPORT_EVERY === 0) onMarked?.(this.marked)
    }
  }

  private markLinks (cid: CID, bytes: Uint8Array): void {
    const links = linksOf(cid, bytes)
    if (links === undefined) { this.opaque++; return }
    for (const link of links) this.mark(link)
  }

  /** Marks a block live, and queues it to be read when it may link to others. */
  private mark (cid: CID): void {
    const kind = linkKind(cid)
    // Its bytes are in its CID: never stored, its links read at once (each smaller than the last).
    if (cid.multihash.code === IDENTITY) {
      if (kind === 'links') this.markLinks(cid, cid.multihash.digest)
      return
    }
    const key = cid.toV1().bytes
    if (this.markLive.run(key).changes === 0) return
    this.marked++
    if (kind === 'links') this.queue.run(key)
    if (kind === 'opaque') this.opaque++
  }

  drop (): void {
    if (!this.db.open) return
    for (const table of TABLES) this.db.exec(`DROP TABLE IF EXISTS temp.${table}`)
  }
}
