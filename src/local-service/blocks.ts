import { closeSync, existsSync, fstatSync, fsync, fsyncSync, openSync, rmSync, writeSync } from 'node:fs'
import { promisify } from 'node:util'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import type { CID } from 'multiformats/cid'
import { failpoint } from '../util/failpoint.js'
import { makeDirsSync } from '../util/make-dirs.js'
import { HttpFailure } from './http.js'
import { PackReaders, type Place } from './pack-readers.js'
import { BlockReads } from './block-reads.js'
import { linkPack, type FileIdentity } from './pack-link.js'

const fsyncAsync = promisify(fsync)

/** A pack is closed for appends past this size and the next block starts a new one. */
export const PACK_LIMIT = 1024 * 1024 * 1024
/** How often reads look for packs a reclaim removed, whose descriptors this process keeps open. */
const REMOVED_CHECK_MS = 5_000

/**
 * Blocks appended to pack files (`packs/<id>.pack`), found through the `blocks` table of the
 * service's database (CIDv1 bytes → pack, offset, length). One file write per block instead of a
 * file, a rename and a directory entry per block (issue 16: 0.37x a plain PUT before, see
 * docs/benchmarks.md).
 *
 * Crash-safety rules (what a kill -9 or a power cut at any moment leaves):
 * 1. A pack is only ever appended to, by the one process that created it (its id comes from the
 *    `packs` table, the file is created exclusively and its directory fsynced), so two processes
 *    sharing a directory (a daemon and a command) never write to the same file.
 * 2. A block's index row is committed only after the pack holding it was fsynced ({@link flush}),
 *    so a row never points at bytes the disk may not have: a block is missing or whole, never torn.
 * 3. Every upload flushes before it is answered and before its listing row is written: what the
 *    service said it stored survives a power cut (its database commits with `synchronous = FULL`).
 * 4. Bytes appended but never indexed (a kill between write and flush) are dead space in the pack,
 *    never read; a removed block (an upload refused at its quota) loses its row, its bytes stay.
 * 5. After an fsync fails, nothing more is stored or answered as stored until the service is
 *    restarted: the kernel may have dropped the pages it could not write and report the next fsync
 *    clean, so the rows of the blocks pending then are never committed, and an upload that relied
 *    on one of them (found pending, "already stored") fails instead of being answered; nor are
 *    they read (`has`, `get`: not stored).
 * 6. A block a reclaim condemned (reclaim.ts) is still stored and read, but a put never relies on
 *    it: the put writes it again, and its row takes the new place when it is committed. A new pack
 *    carries the reclaim epoch this process last entered an upload in, and the pack being written
 *    is closed for appends once an upload enters a later one: so a reclaim, once the uploads of the
 *    epochs before its own have ended, knows no process appends to a pack of those epochs.
 * 7. A read whose pack a reclaim removed under it looks its block up again and reads it where the
 *    reclaim moved it; a pack descriptor kept open is closed once its pack is removed.
 * Data dirs from before packs keep their `blocks/xx/<cid>` files: they are read in place.
 */
export class BlockStore {
  private readonly packs: string
  private readonly legacy: string | undefined
  private readonly pending = new Map<string, Place & { readonly key: Uint8Array }>()
  /** Blocks of requests still running that may yet be removed; `shared` once another put them too. */
  private readonly provisional = new Map<string, { readonly owner: object, shared: boolean }>()
  private readonly readers: PackReaders
  private readonly reads: BlockReads
  private writing: { id: number, fd: number, size: number, epoch: number } | undefined
  /** The latest reclaim epoch an upload entered in, here (rule 6). */
  private epoch = 0
  /** When the packs kept open were last checked against those a reclaim removed (rule 7). */
  private checkedRemovedAt = 0
  /** Blocks written so far (appended, not found already stored): what a sync under way covers. */
  private puts = 0
  /** The fsync under way ({@link flushAsync}), and how many writes it covers. */
  private syncing: { readonly covers: number, readonly done: Promise<void> } | undefined
  /** The fsync that follows it, shared by every flush that came while it ran. */
  private nextSync: Promise<void> | undefined
  /** fsyncs made by {@link flushAsync}: uploads ending together share one. */
  syncs = 0
  /** The first failed fsync: rule 5. */
  private syncFailure: unknown
  private readonly find: Database.Statement
  private readonly insert: Database.Statement
  private readonly drop: Database.Statement
  private readonly newPack: Database.Statement
  private readonly removedPack: Database.Statement

  /** @param packLimit - where a pack is closed for appends ({@link PACK_LIMIT}; tests make it small). */
  constructor (dir: string, private readonly db: Database.Database, readonly packLimit = PACK_LIMIT) {
    this.packs = join(dir, 'packs')
    makeDirsSync(this.packs, 0o700)
    this.readers = new PackReaders(this.packs, id => this.packPath(id))
    this.reads = new BlockReads(cid => this.place(cid), this.readers, name => this.legacyPath(name))
    const old = join(dir, 'blocks')
    this.legacy = existsSync(old) ? old : undefined
    this.find = db.prepare('SELECT pack, offset, length, condemned FROM blocks WHERE cid = ?')
    // A row already there stays, unless condemned: then the block was written again (rule 6).
    this.insert = db.prepare(`INSERT INTO blocks (cid, pack, offset, length) VALUES (?, ?, ?, ?)
      ON CONFLICT (cid) DO UPDATE SET pack = excluded.pack, offset = excluded.offset, length = excluded.length, condemned = NULL
      WHERE blocks.condemned IS NOT NULL`)
    this.drop = db.prepare('DELETE FROM blocks WHERE cid = ?')
    this.newPack = db.prepare('INSERT INTO packs (created_at, epoch) VALUES (?, ?)')
    this.removedPack = db.prepare('SELECT removed_at IS NOT NULL FROM packs WHERE id = ?').pluck()
  }

  /** Where pack `id` lies. */
  packPath (id: number): string {
    return join(this.packs, `${String(id).padStart(8, '0')}.pack`)
  }

  private legacyPath (name: string): string | undefined {
    return this.legacy === undefined ? undefined : join(this.legacy, name.slice(-3, -1), name)
  }

  private place (cid: CID): { name: string, key: Uint8Array, place: Place | undefined, condemned: boolean } {
    const v1 = cid.toV1()
    const name = v1.toString()
    // After a failed sync the pending blocks were never made durable nor answered as stored (rule 5):
    // they are not served either (a read could be of pages the kernel dropped).
    const pending = this.syncFailure === undefined ? this.pending.get(name) : undefined
    if (pending !== undefined) return { name, key: v1.bytes, place: pending, condemned: false }
    const row = this.find.get(v1.bytes) as (Place & { condemned: number | null }) | undefined
    return { name, key: v1.bytes, place: row, condemned: row !== undefined && row.condemned !== null }
  }

  /**
   * An upload entered reclaim epoch `epoch` (upload-gate.ts): the pack being written is closed
   * for appends before its next block if it was made in an earlier one (rule 6).
   */
  notice (epoch: number): void {
    if (epoch <= this.epoch) return
    this.epoch = epoch
    this.forgetRemovedPacks()
  }

  has (cid: CID): boolean {
    const { name, place } = this.place(cid)
    if (place !== undefined) return true
    const path = this.legacyPath(name)
    return path !== undefined && existsSync(path)
  }

  private packForWrite (length: number): { id: number, fd: number, size: number } {
    if (this.writing !== undefined && this.writing.size + length <= this.packLimit && this.writing.epoch >= this.epoch) return this.writing
    if (this.writing !== undefined) {
      // Its descriptor stays open as the pack's reader (closed in close()): closing it here left
      // `readers` holding a closed number, so the next read of that pack read whatever file the
      // number was given to next, and close() failed with EBADF (a first backup past 1 GiB did).
      this.flush()
      this.writing = undefined
    }
    const id = Number(this.newPack.run(Date.now(), this.epoch).lastInsertRowid)
    // Exclusive: a pack id is never reused, so finding the file means something else wrote it.
    const fd = openSync(this.packPath(id), 'wx+', 0o600)
    const dir = openSync(this.packs, 'r')
    try { fsyncSync(dir) } finally { closeSync(dir) }
    this.writing = { id, fd, size: 0, epoch: this.epoch }
    this.readers.keep(id, fd)
    return this.writing
  }

  /**
   * Appends a block unless it is already stored; readable at once, durable after {@link flush}.
   * `owner`: the request writing it may still fail and {@link remove} it; until it
   * {@link settle}s, a put of the same block by any other request keeps it from being removed.
   */
  put (cid: CID, block: Uint8Array, owner?: object): void {
    this.refuseAfterFailedSync()
    const { name, key, place, condemned } = this.place(cid)
    if (place !== undefined && !condemned) {
      const held = this.provisional.get(name)
      if (held !== undefined && held.owner !== owner) held.shared = true
      return
    }
    // Written again, a condemned block is no request's to remove: it was stored before this one came.
    if (owner !== undefined && !condemned) this.provisional.set(name, { owner, shared: false })
    const pack = this.packForWrite(block.byteLength)
    let done = 0
    while (done < block.byteLength) done += writeSync(pack.fd, block, done, block.byteLength - done, pack.size + done)
    this.pending.set(name, { key, pack: pack.id, offset: pack.size, length: block.byteLength })
    pack.size += block.byteLength
    this.puts++
  }

  /** Makes every block put so far durable: fsyncs the pack, then commits their index rows. */
  flush (): void {
    this.refuseAfterFailedSync()
    if (this.pending.size === 0 || this.writing === undefined) return
    this.syncPack(() => { fsyncSync((this.writing as { fd: number }).fd) })
    this.db.transaction(() => {
      for (const p of this.pending.values()) this.insert.run(p.key, p.pack, p.offset, p.length)
    }).immediate()
    this.pending.clear()
  }

  /**
   * {@link flush} without holding the thread while the disk syncs: the blocks put so far are made
   * durable, then their rows committed (rule 2 holds: a row is committed only after an fsync that
   * followed its bytes' write). A pack closed meanwhile was flushed whole as it closed.
   *
   * Group commit: one fsync at a time. A caller whose blocks were all written before the sync
   * under way began waits for that one; the others share the next, which starts once it ends and
   * covers every block put until then (uploads ending together cost one fsync, not one each).
   */
  async flushAsync (): Promise<void> {
    this.refuseAfterFailedSync()
    if (this.pending.size === 0 || this.writing === undefined) return
    const need = this.puts
    const running = this.syncing
    if (running !== undefined && running.covers >= need) return await running.done
    if (running === undefined) return await this.startSync().done
    this.nextSync ??= running.done.then(() => {}, () => {}).then(async () => {
      this.nextSync = undefined
      await this.startSync().done
    })
    return await this.nextSync
  }

  /** fsyncs the pack being written, then commits the rows of the blocks pending when it began. */
  private startSync (): { covers: number, done: Promise<void> } {
    const covers = this.puts
    const sync = async (): Promise<void> => {
      if (this.pending.size === 0 || this.writing === undefined) return
      const taken = [...this.pending]
      const fd = this.writing.fd
      await this.syncPack(async () => { await fsyncAsync(fd) })
      this.syncs++
      this.db.transaction(() => {
        for (const [name, place] of taken) {
          // Committed meanwhile by another flush, or removed: nothing to do.
          if (this.pending.get(name) !== place) continue
          this.insert.run(place.key, place.pack, place.offset, place.length)
          this.pending.delete(name)
        }
      }).immediate()
    }
    const running = { covers, done: sync() }
    this.syncing = running
    const clear = (): void => { if (this.syncing === running) this.syncing = undefined }
    running.done.then(clear, clear)
    return running
  }

  /** Runs an fsync of the pack; a failure is kept (rule 5) and every later write is refused. */
  private syncPack<T> (sync: () => T): T {
    const failed = (err: unknown): never => {
      this.syncFailure ??= err
      // The 503 that says what happened and what to do, not the bare EIO.
      this.refuseAfterFailedSync()
      throw err
    }
    // A sync after the failure reports clean though the pages may be gone, and one under way as
    // another failed on the same file may have had the error reported to that one only: neither answers.
    this.refuseAfterFailedSync()
    try {
      failpoint('service:pack-fsync')
      const done = sync()
      return (done instanceof Promise ? done.then(value => { this.refuseAfterFailedSync(); return value }, failed) : done) as T
    } catch (err) {
      return failed(err)
    }
  }

  private refuseAfterFailedSync (): void {
    if (this.syncFailure === undefined) return
    const code = (this.syncFailure as NodeJS.ErrnoException).code ?? 'an error'
    throw new HttpFailure(503, `the service's disk failed to sync its data (${code}): nothing more is stored until the service is restarted; check the disk (dmesg) first`)
  }

  /**
   * Takes a whole file this process wrote, whose blocks it hashed as it wrote them (a sealed part
   * on its way out), as a pack of its own: hard-linked into `packs/`, the nodes above its leaves
   * appended, fsynced with its directory, then its rows committed (rules 1 and 2 hold: the pack
   * is made exclusively by this process, and rows follow the fsync). Its leaves are not read,
   * copied or hashed here. `leaves`: each leaf's CID, in the file's order, `leafBytes` long but
   * the last. Answers false, having stored nothing, when the file cannot be linked here (another
   * filesystem): the caller then stores its blocks one by one. The caller never writes to
   * `path` again (it may remove it). `file`: the file the caller holds open and sized its leaves
   * by; what was linked must be that very file at that size, else nothing is taken (a 400).
   */
  async adopt (path: string, leaves: readonly CID[], leafBytes: number, nodes: ReadonlyArray<readonly [CID, Uint8Array]>, file: FileIdentity): Promise<boolean> {
    this.refuseAfterFailedSync()
    const id = Number(this.newPack.run(Date.now(), this.epoch).lastInsertRowid)
    const fd = linkPack(path, this.packPath(id), file)
    // Not kept as a reader: parts make many packs (PackReaders opens them as they are read).
    if (fd === undefined) return false
    try {
      return await this.adopted(fd, id, leaves, leafBytes, nodes)
    } finally {
      closeSync(fd)
    }
  }

  private async adopted (fd: number, id: number, leaves: readonly CID[], leafBytes: number, nodes: ReadonlyArray<readonly [CID, Uint8Array]>): Promise<true> {
    const rows: Array<{ key: Uint8Array, offset: number, length: number }> = []
    let size = fstatSync(fd).size
    leaves.forEach((cid, i) => { rows.push({ key: cid.toV1().bytes, offset: i * leafBytes, length: Math.min(leafBytes, size - i * leafBytes) }) })
    for (const [cid, block] of nodes) {
      let done = 0
      while (done < block.byteLength) done += writeSync(fd, block, done, block.byteLength - done, size + done)
      rows.push({ key: cid.toV1().bytes, offset: size, length: block.byteLength })
      size += block.byteLength
    }
    await this.syncPack(async () => {
      await fsyncAsync(fd)
      const dir = openSync(this.packs, 'r')
      try { await fsyncAsync(dir) } finally { closeSync(dir) }
    })
    this.syncs++
    this.db.transaction(() => {
      for (const row of rows) this.insert.run(row.key, id, row.offset, row.length)
    }).immediate()
    return true
  }

  /** The request that put these provisionally is done with them: they stay. */
  settle (cids: readonly CID[]): void {
    for (const cid of cids) this.provisional.delete(cid.toV1().toString())
  }

  /**
   * Removes a block a failing request had just written, unless another request put it meanwhile
   * (its upload relies on it: removing it would lose that account's file).
   */
  remove (cid: CID): void {
    const v1 = cid.toV1()
    const held = this.provisional.get(v1.toString())
    this.provisional.delete(v1.toString())
    if (held?.shared === true) return
    this.pending.delete(v1.toString())
    this.drop.run(v1.bytes)
    const path = this.legacyPath(v1.toString())
    if (path !== undefined) rmSync(path, { force: true })
  }

  /** A block's bytes: read into `into` when it fits (a view of it answered), else into a new buffer. */
  async get (cid: CID, into?: Uint8Array): Promise<Uint8Array> {
    this.forgetRemovedPacksNow()
    return await this.reads.get(cid, into)
  }

  /**
   * The blocks `cids`, in order, read into `into` as far as it holds them (see
   * {@link PackReaders.readRun}: neighbours in a pack in one read); undefined for a block not stored.
   */
  async getRun (cids: readonly CID[], into: Uint8Array): Promise<Array<Uint8Array | undefined>> {
    this.forgetRemovedPacksNow()
    return await this.reads.getRun(cids, into)
  }

  /** Blocks read where they lie (a reclaim copying a pack's blocks): see {@link PackReaders.readRun}. */
  async readPlaces (places: ReadonlyArray<{ readonly place: Place, readonly name: string }>, into: Uint8Array): Promise<Uint8Array[]> {
    return await this.readers.readRun(places, into)
  }

  /** Packs a reclaim removed: their descriptors kept here are closed once no read uses them. */
  forgetPacks (ids: readonly number[]): void {
    for (const id of ids) {
      if (this.writing?.id === id) {
        // Never while a sync may use its descriptor; a pack of an earlier epoch has none pending (rule 6).
        if (this.pending.size > 0 || this.syncing !== undefined) continue
        this.writing = undefined
      }
      this.readers.forget(id)
    }
  }

  /** Every so often on reads, and as an upload enters a new epoch: closes what removed packs kept open. */
  private forgetRemovedPacksNow (): void {
    if (Date.now() - this.checkedRemovedAt < REMOVED_CHECK_MS) return
    this.forgetRemovedPacks()
  }

  private forgetRemovedPacks (): void {
    this.checkedRemovedAt = Date.now()
    if (!this.db.open) return
    this.forgetPacks(this.readers.kept().filter(id => this.removedPack.get(id) === 1))
  }

  /** Flushes and closes every pack file (the service is stopping). */
  close (): void {
    // After a failed sync nothing pending is committed (rule 5): the packs are just closed.
    if (this.syncFailure === undefined) this.flush()
    this.readers.close()
    this.writing = undefined
  }
}
