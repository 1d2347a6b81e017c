import { closeSync, fsync, fsyncSync, openSync, readdirSync, statSync, unlinkSync, writeSync } from 'node:fs'
import { promisify } from 'node:util'
import type Database from 'better-sqlite3'
import { CID } from 'multiformats/cid'
import { checkBlock } from '../content/index.js'
import { ServiceDataDamagedError } from '../errors.js'
import { failpoint } from '../util/failpoint.js'
import type { BlockStore } from './blocks.js'

const fsyncAsync = promisify(fsync)

/** A pack is rewritten once this share of its bytes is dead (dropped blocks, bytes never indexed). */
export const REPACK_DEAD_SHARE = 0.25
/** Blocks copied at once: read into one buffer this large (a larger block gets its own). */
const COPY_BUFFER = 4 * 1024 * 1024
/** Rows of a pack moved by one transaction, after one fsync of what they were copied to. */
const ROWS_PAGE = 4_096

/** What the packs gave back. */
export interface PackOutcome {
  /** Packs whose live blocks were copied into a new pack, then removed. */
  readonly rewritten: number
  /** Pack files removed: those rewritten, those with no live block left, and leftovers of a killed reclaim. */
  readonly removed: number
  /** Bytes the pack files gave back: those removed, less what their live blocks take in new packs. */
  readonly diskBytesFreed: number
  /** Dead bytes left in packs under {@link REPACK_DEAD_SHARE}. */
  readonly deadBytesLeft: number
}

interface Row { readonly cid: Uint8Array, readonly offset: number, readonly length: number }

/**
 * Rewrites the packs of earlier epochs whose dead share passes {@link REPACK_DEAD_SHARE}: their live
 * blocks are copied, each checked against its CID, into a new pack of this process (created
 * exclusively, its directory fsynced), fsynced, and only then do their rows move to it, a page
 * at a time in one transaction each. Once no row names the old pack it is marked removed, and
 * then its file is unlinked. A kill at any step leaves each row naming fsynced bytes: the old
 * pack's until its row moved, the new one's after. A pack with no live block is removed without
 * a copy; a new pack left with no rows by a kill is such a pack, in the next reclaim.
 */
export class PackRewriter {
  private out: { id: number, fd: number, size: number } | undefined
  private written = 0
  private removedBytes = 0
  private readonly rows: Database.Statement
  private readonly move: Database.Statement
  private readonly left: Database.Statement
  private readonly markRemoved: Database.Statement

  /** `epoch`: the reclaim's own; packs made in it are not touched, and those it makes carry it. */
  constructor (private readonly db: Database.Database, private readonly blocks: BlockStore, private readonly packsDir: string, private readonly epoch: number, private readonly packLimit: number) {
    this.rows = db.prepare('SELECT cid, offset, length FROM blocks WHERE pack = ? AND offset > ? ORDER BY offset LIMIT ?')
    this.move = db.prepare('UPDATE blocks SET pack = ?, offset = ? WHERE cid = ? AND pack = ? AND offset = ?')
    this.left = db.prepare('SELECT count(*) FROM blocks WHERE pack = ?').pluck()
    this.markRemoved = db.prepare('UPDATE packs SET removed_at = ? WHERE id = ? AND removed_at IS NULL')
  }

  async run (signal?: AbortSignal, onPack?: (done: number, of: number) => void): Promise<PackOutcome> {
    let removed = this.removeLeftovers()
    const live = new Map((this.db.prepare('SELECT pack, SUM(length) AS bytes FROM blocks GROUP BY pack').all() as Array<{ pack: number, bytes: number }>).map(p => [p.pack, p.bytes]))
    const candidates = this.db.prepare('SELECT id FROM packs WHERE removed_at IS NULL AND epoch < ? ORDER BY id').pluck().all(this.epoch) as number[]
    let rewritten = 0
    let deadBytesLeft = 0
    try {
      for (const [i, id] of candidates.entries()) {
        signal?.throwIfAborted()
        const size = statSync(this.blocks.packPath(id), { throwIfNoEntry: false })?.size ?? 0
        const held = live.get(id) ?? 0
        const dead = size - held
        if (held === 0) {
          if (this.remove(id, size)) removed++
        } else if (dead > 0 && dead >= size * REPACK_DEAD_SHARE) {
          if (await this.rewrite(id, size, signal)) { rewritten++; removed++ }
        } else {
          deadBytesLeft += Math.max(0, dead)
        }
        onPack?.(i + 1, candidates.length)
      }
    } finally {
      this.closeOut()
    }
    return { rewritten, removed, diskBytesFreed: Math.max(0, this.removedBytes - this.written), deadBytesLeft }
  }

  /** Unlinks the files of packs marked removed whose unlink a kill cut short. */
  private removeLeftovers (): number {
    const removed = this.db.prepare('SELECT removed_at IS NOT NULL FROM packs WHERE id = ?').pluck()
    let count = 0
    for (const name of readdirSync(this.packsDir)) {
      const match = /^(\d+)\.pack$/.exec(name)
      if (match === null || removed.get(Number(match[1])) !== 1) continue
      this.unlink(Number(match[1]), statSync(this.blocks.packPath(Number(match[1])), { throwIfNoEntry: false })?.size ?? 0)
      count++
    }
    if (count > 0) this.syncDir()
    return count
  }

  /** Marks a pack removed if no row names it, then unlinks its file. */
  private remove (id: number, size: number): boolean {
    const marked = this.db.transaction(() => (this.left.get(id) as number) === 0 && this.markRemoved.run(Date.now(), id).changes === 1).immediate()
    if (!marked) return false
    failpoint('service:reclaim-pack-moved')
    this.unlink(id, size)
    this.syncDir()
    return true
  }

  private unlink (id: number, size: number): void {
    this.blocks.forgetPacks([id])
    try {
      unlinkSync(this.blocks.packPath(id))
      this.removedBytes += size
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }

  private async rewrite (id: number, size: number, signal?: AbortSignal): Promise<boolean> {
    const buffer = Buffer.allocUnsafe(COPY_BUFFER)
    for (let after = -1; ;) {
      signal?.throwIfAborted()
      const rows = this.rows.all(id, after, ROWS_PAGE) as Row[]
      if (rows.length === 0) break
      // A new output pack only between pages: every page's copies are fsynced before its rows move.
      const out = this.output()
      const moves = await this.copy(id, rows, buffer, out)
      await fsyncAsync(out.fd)
      failpoint('service:reclaim-pack-written')
      this.db.transaction(() => {
        for (const m of moves) this.move.run(out.id, m.to, m.row.cid, id, m.row.offset)
      }).immediate()
      after = (rows[rows.length - 1] as Row).offset
    }
    return this.remove(id, size)
  }

  /** Appends `rows`' blocks, read from pack `id` and checked, to the output pack; answers where each went. */
  private async copy (id: number, rows: readonly Row[], buffer: Buffer, out: { fd: number, size: number }): Promise<Array<{ row: Row, to: number }>> {
    const moves: Array<{ row: Row, to: number }> = []
    for (let i = 0; i < rows.length;) {
      let j = i + 1
      for (let bytes = (rows[i] as Row).length; j < rows.length && bytes + (rows[j] as Row).length <= COPY_BUFFER; j++) bytes += (rows[j] as Row).length
      const run = rows.slice(i, j)
      const cids = run.map(row => CID.decode(row.cid))
      // Named only in an error: a run of small blocks is not spent printing CIDs.
      const views = await this.blocks.readPlaces(run.map((row, k) => ({ place: { pack: id, offset: row.offset, length: row.length }, get name () { return (cids[k] as CID).toString() } })), buffer)
      let at = out.size
      run.forEach((row, k) => {
        const cid = cids[k] as CID
        // A damaged block is never copied as if whole: the pack stays, and the reclaim says where.
        if (checkBlock(cid, views[k] as Uint8Array) === 'mismatch') throw new ServiceDataDamagedError(`block ${cid.toString()} in pack ${id} does not match its CID: the pack was left as it is; the service's data dir is damaged; restore it from a backup, or publish again from a device that holds the files`)
        moves.push({ row, to: at })
        at += row.length
      })
      writeAll(out, views)
      this.written += at - out.size
      out.size = at
      i = j
    }
    return moves
  }

  /** The pack blocks are copied into: a new one past the pack limit, made as the store makes its own (blocks.ts, rule 1). */
  private output (): { id: number, fd: number, size: number } {
    if (this.out !== undefined && this.out.size < this.packLimit) return this.out
    this.closeOut()
    const id = Number(this.db.prepare('INSERT INTO packs (created_at, epoch) VALUES (?, ?)').run(Date.now(), this.epoch).lastInsertRowid)
    const fd = openSync(this.blocks.packPath(id), 'wx+', 0o600)
    this.syncDir()
    this.out = { id, fd, size: 0 }
    return this.out
  }

  private closeOut (): void {
    if (this.out === undefined) return
    closeSync(this.out.fd)
    this.out = undefined
  }

  private syncDir (): void {
    const dir = openSync(this.packsDir, 'r')
    try { fsyncSync(dir) } finally { closeSync(dir) }
  }
}

/** Appends blocks at the pack's end: with one write when they lie one after another in one buffer (as a run is read). */
function writeAll (out: { fd: number, size: number }, views: readonly Uint8Array[]): void {
  const first = views[0]
  let whole = first
  let end = first === undefined ? 0 : first.byteOffset + first.byteLength
  for (const view of views.slice(1)) {
    if (whole === undefined || view.buffer !== whole.buffer || view.byteOffset !== end) { whole = undefined; break }
    end += view.byteLength
  }
  const writes = whole !== undefined && first !== undefined ? [new Uint8Array(first.buffer, first.byteOffset, end - first.byteOffset)] : views
  let at = out.size
  for (const bytes of writes) {
    for (let done = 0; done < bytes.byteLength;) done += writeSync(out.fd, bytes, done, bytes.byteLength - done, at + done)
    at += bytes.byteLength
  }
}
