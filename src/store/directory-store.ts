import { lstat, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import { CID } from 'multiformats/cid'
import { CidBuilder, type CidProfile } from '../content/index.js'
import { ContentNotFoundError, DirectoryStoreError, IntegrityError } from '../errors.js'
import { makeDirs } from '../util/make-dirs.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import type {
  BlockSink, BlocksOptions, BlocksRequest, GetBytesOptions, GetOptions, GotObject, ObjectInfo,
  DeletedObjects, DeleteOptions, ObjectStore, PutOptions, StoreCallOptions
} from './object-store.js'
import { canonical, chunksOf, HeldDir, mkdirOnce, openRegular, READ_BYTES, readSmallFile, writeFailure } from './directory-files.js'
import { asidesOf, removeDeadTemps, writeTemp } from './directory-temps.js'
import { putBackDeadAsides, removeIfStoredBefore, type InShard } from './directory-aside.js'
import { defaultSlab, fillSlabs, hashed, TooLarge } from './slabs.js'
import { receiveVerified, type SourceTry } from './verified-receive.js'

/**
 * Whether a store is made where none is: `true` in any directory (`login --mirror`: the path is
 * the user's config), `'empty'` only in one missing or empty (`export --dir`: a path typed once).
 */
export type CreateStore = boolean | 'empty'

/** What the marker file says: a directory cidsync made for objects, in this layout. */
export const DIRECTORY_STORE_FORMAT = 'cidsync-directory/1'
const MARKER = 'cidsync-store.json'
const MAX_MARKER_BYTES = 4096
/** The most a read takes when the caller names no size: as much as a gateway's answer. */
const DEFAULT_MAX_BYTES = 4 * 1024 * 1024 * 1024

/**
 * Objects kept as plain files in a directory: a USB disk, a NAS mount. Each object is one file,
 * `objects/<last two characters of its CID>/<CID>`, holding the object's bytes; its blocks are
 * made again from them under its profile when an export asks. Nothing here is trusted: every
 * read is hashed to the CID, and only regular files are opened (a link or a FIFO is not
 * followed). A write goes only through folders held open without following a link, and only
 * while the marker is there. Crash rules as the pack store's: a put writes a temp file in
 * `tmp/`, fsyncs it, renames it into place and fsyncs the directory. A put killed midway leaves
 * only a temp file, removed by a later put once its process is gone. A delete with a time bound
 * moves the file aside into `tmp/` before it reads the file's time; one killed midway is undone by
 * the next delete or put (`directory-aside.ts`). Reads write nothing, so a
 * store made read-only restores. Files 0600, directories 0700.
 */
export class DirectoryObjectStore implements ObjectStore {
  readonly describe: string

  private ready: Promise<void> | undefined
  /** Whether the temps of dead puts were removed (once, before the first put). */
  private tidied = false
  /** Whether the files left aside by killed deletes were put back (see {@link removeIfStoredBefore}): once. */
  private asideTidied = false

  /**
   * The store at `dir`, opened at its first use (nothing is read before): a directory without
   * the marker is refused then, unless `create` makes the store.
   */
  constructor (readonly dir: string, private readonly options: { readonly create?: CreateStore } = {}) {
    this.describe = `the directory store ${dir}`
  }

  /** Opens the store at `dir` now. */
  static async open (dir: string, options: { readonly create?: CreateStore } = {}): Promise<DirectoryObjectStore> {
    const store = new DirectoryObjectStore(dir, options)
    await store.opened()
    return store
  }

  /** The marker checked (or written, with the folders): once. */
  async opened (): Promise<void> {
    this.ready ??= this.openNow()
    // A failed open (a disk not mounted yet) is tried again at the next use.
    await this.ready.catch((err: unknown) => { this.ready = undefined; throw err })
  }

  private async openNow (): Promise<void> {
    const { dir } = this
    const text = await this.marker()
    if (text === undefined) {
      const { create } = this.options
      if (create === undefined || create === false) throw this.notAStore()
      if (create === 'empty') await this.emptyOrMissing()
      await this.parentThere()
      await makeDirs(dir, 0o700)
      writeFileAtomicSync(join(dir, MARKER), JSON.stringify({ format: DIRECTORY_STORE_FORMAT }) + '\n', { mode: 0o600 })
      for (const sub of ['objects', 'tmp']) await mkdirOnce(join(dir, sub))
    } else {
      let format: unknown
      try { format = (JSON.parse(text) as { format?: unknown }).format } catch { format = undefined }
      if (format !== DIRECTORY_STORE_FORMAT) throw new DirectoryStoreError(`${join(dir, MARKER)} names another format than ${DIRECTORY_STORE_FORMAT}: a newer cidsync made it, or it is not cidsync's`)
    }
  }

  /** Refuses a directory that holds anything: a store is made only where nothing would mix with it. */
  private async emptyOrMissing (): Promise<void> {
    const names = await readdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return []
      throw new DirectoryStoreError(`${this.dir} cannot be made a directory store: ${err.message}`, { cause: err })
    })
    if (names.length > 0) throw new DirectoryStoreError(`${this.dir} holds files and is not a cidsync directory store (no ${MARKER}): nothing was written there. Give a new or empty directory, or a store made before`)
  }

  /**
   * A store is made only in a folder that exists: a disk not mounted leaves its mount point gone
   * or empty, and a store made there would fill the system disk instead.
   */
  private async parentThere (): Promise<void> {
    const parent = dirname(this.dir)
    const there = await stat(parent).catch(() => undefined)
    if (there?.isDirectory() !== true) throw new DirectoryStoreError(`${parent} does not exist, so ${this.dir} was not made: is its disk mounted? If the store belongs there, make the folder first (mkdir -p); nothing was written`)
  }

  /** The marker's text, or undefined when it is not there. */
  private async marker (): Promise<string | undefined> {
    const path = join(this.dir, MARKER)
    try {
      return await readSmallFile(path, MAX_MARKER_BYTES)
    } catch (err) {
      if (err instanceof DirectoryStoreError) throw err
      throw new DirectoryStoreError(`could not read ${path}: ${(err as Error).message}`, { cause: err })
    }
  }

  private notAStore (): DirectoryStoreError {
    return new DirectoryStoreError(`${this.dir} is not a cidsync directory store (no ${MARKER}): check the path and that its disk is mounted`)
  }

  /**
   * The store is still there: before each write, and before a miss is believed. A disk unmounted
   * since the store was opened leaves an empty mount point. Nothing is written in the disk's
   * place, and nothing missing there is taken for missing from the store.
   */
  async present (): Promise<void> {
    await this.opened()
    if (await this.marker() === undefined) throw this.notAStore()
  }

  private objectPath (cid: string): string {
    return join(this.dir, 'objects', cid.slice(-2), cid)
  }

  /** A folder of the store, held without following a link; `tmp/` and `objects/` are made when missing. */
  private async held (sub: 'tmp' | 'objects'): Promise<HeldDir> {
    const path = join(this.dir, sub)
    // Not recursive: the store's own folder is there (its marker was just read).
    await mkdirOnce(path)
    return await HeldDir.open(path, path)
  }

  async put (path: string, profile: CidProfile, options: PutOptions = {}): Promise<{ cid: string, size: number }> {
    await this.present()
    const tmp = await this.held('tmp')
    try {
      if (!this.tidied) {
        this.tidied = true
        await removeDeadTemps(tmp)
        await this.tidyAsideOnce(tmp)
      }
      return await this.putIn(tmp, path, profile, options)
    } catch (err) {
      throw writeFailure(err, this.dir, this.describe)
    } finally {
      await tmp.close()
    }
  }

  /** The put: its temp written in `tmp`, then renamed into its shard, each reached through a held folder. */
  private async putIn (tmp: HeldDir, path: string, profile: CidProfile, options: PutOptions): Promise<{ cid: string, size: number }> {
    const { temp, cid, size } = await writeTemp(tmp, path, profile, options)
    try {
      if (options.expectedCid !== undefined && CID.parse(options.expectedCid).toString() !== cid) {
        throw new IntegrityError(`${path} hashes to ${cid} under ${profile.name}, not ${options.expectedCid}: it changed after it was hashed`)
      }
      options.signal?.throwIfAborted()
      await this.inShard(cid, async (shard) => { await rename(temp, shard.at(cid)) })
      return { cid, size }
    } catch (err) {
      await rm(temp, { force: true })
      throw err
    }
  }

  /** {@link inShard}, for the deletes that move an object aside. */
  private readonly shards: InShard = async (cid, fn) => { await this.inShard(cid, fn) }

  /** Runs `fn` in the shard of `cid` (made when missing), then fsyncs the shard and `objects/`. */
  private async inShard (cid: string, fn: (shard: HeldDir) => Promise<void>): Promise<void> {
    const objects = await this.held('objects')
    try {
      await mkdirOnce(objects.at(cid.slice(-2)))
      const shard = await HeldDir.open(objects.at(cid.slice(-2)), join(this.dir, 'objects', cid.slice(-2)))
      try {
        await fn(shard)
        await shard.sync()
      } finally {
        await shard.close()
      }
      await objects.sync()
    } finally {
      await objects.close()
    }
  }

  /**
   * The object's file, opened only when it is a regular file (never a link, a FIFO, a device).
   * One larger than `maxBytes` is refused by its size, before a byte is read.
   */
  private async openObject (cid: string, maxBytes: number): Promise<{ handle: FileHandle, size: number }> {
    await this.opened()
    if (canonical(cid) === undefined) throw new IntegrityError(`${JSON.stringify(cid.slice(0, 100))} is not a CID`)
    const refuse = (kind: string): ContentNotFoundError => new ContentNotFoundError(`${this.describe} does not hold ${cid}: its entry is ${kind}, not a regular file`)
    const opened = await openRegular(this.objectPath(cid), refuse) ?? await this.openAside(cid, refuse)
    if (opened === undefined) {
      await this.present()
      throw new ContentNotFoundError(`${this.describe} does not hold ${cid}`)
    }
    const { handle, stats } = opened
    if (stats.size > maxBytes) {
      await handle.close()
      throw this.overCap(cid, maxBytes)
    }
    return { handle, size: stats.size }
  }

  /**
   * The object moved aside by a delete deciding now (or killed while it did): read there, so a read
   * racing a prune never misses an object put again meanwhile. Its bytes are checked as any read's.
   */
  private async openAside (cid: string, refuse: (kind: string) => Error): Promise<{ handle: FileHandle, stats: Stats } | undefined> {
    const tmp = join(this.dir, 'tmp')
    // A link planted where tmp/ should be is not followed, for reads either.
    if ((await lstat(tmp).catch(() => undefined))?.isDirectory() !== true) return undefined
    for (const name of await asidesOf(tmp, cid)) {
      const opened = await openRegular(join(tmp, name), refuse).catch(() => undefined)
      if (opened !== undefined) return opened
    }
    return undefined
  }

  private overCap (cid: string, cap: number): IntegrityError {
    return new IntegrityError(`${cid} in ${this.describe} holds more than the ${cap} bytes it was expected to: not that object`)
  }

  private async receive (cid: string, profile: CidProfile, destination: string | undefined, reader: ((bytes: Readable) => Promise<void>) | undefined, options: GetOptions): Promise<GotObject> {
    const tried: SourceTry = { wrongBytes: false }
    const { onProgress, ...rest } = options
    const progress = onProgress === undefined ? undefined : (received: number, total: number | undefined): void => { onProgress({ type: 'store:get:progress', detail: { received, total } }) }
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES
    const { handle, size } = await this.openObject(cid, maxBytes)
    try {
      const got = await receiveVerified(async () => ({
        stream: handle.createReadStream({ highWaterMark: READ_BYTES, autoClose: false }),
        total: size,
        from: `${this.describe} (${cid})`,
        origin: this.describe,
        overCap: (cap) => this.overCap(cid, cap)
      }), cid, profile, destination, reader, { ...rest, onProgress: progress }, maxBytes, tried)
      return { size: got.size, from: got.gateway }
    } catch (err) {
      if (tried.fatal !== undefined) throw tried.fatal.err
      throw err
    } finally {
      await handle.close()
    }
  }

  async getFile (cid: string, profile: CidProfile, destination: string, options: GetOptions = {}): Promise<GotObject> {
    return await this.receive(cid, profile, destination, undefined, options)
  }

  async getInto (cid: string, profile: CidProfile, reader: (bytes: Readable) => Promise<void>, options: GetOptions = {}): Promise<GotObject> {
    return await this.receive(cid, profile, undefined, reader, options)
  }

  async getBytes (cid: string, profile: CidProfile, options: GetBytesOptions = {}): Promise<Uint8Array[]> {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES
    const { handle } = await this.openObject(cid, maxBytes)
    try {
      const builder = new CidBuilder(profile)
      const filled = await fillSlabs(hashed(chunksOf(handle, options.signal), builder), maxBytes, options.slab ?? defaultSlab)
        .catch((err: unknown) => { throw err instanceof TooLarge ? this.overCap(cid, maxBytes) : err })
      const got = builder.finish().toString()
      if (got !== cid) throw new IntegrityError(`bytes of ${cid} in ${this.describe} hash to ${got}: the file was changed or damaged`)
      return filled
    } finally {
      await handle.close()
    }
  }

  async blocks<T extends BlocksRequest> (objects: AsyncIterable<T>, sink: BlockSink, options: BlocksOptions<T> = {}): Promise<void> {
    for await (const object of objects) {
      const walked = await this.objectBlocks(object, sink, options.signal).catch((err: unknown) => { throw options.failure?.(object, err) ?? err })
      options.onObject?.(object, walked)
    }
  }

  /** One object's blocks made again from its bytes under its profile; the root must be its CID. */
  private async objectBlocks (object: BlocksRequest, sink: BlockSink, signal?: AbortSignal): Promise<{ size: number, blocks: number }> {
    const maxBytes = object.maxBytes ?? DEFAULT_MAX_BYTES
    const { handle } = await this.openObject(object.cid, maxBytes)
    try {
      const pending: Array<{ cid: CID, bytes: Uint8Array }> = []
      // Copied: the builder reuses its buffers.
      const builder = new CidBuilder(object.profile, { onBlock: (cid, bytes) => { pending.push({ cid, bytes: Uint8Array.prototype.slice.call(bytes) }) } })
      let size = 0
      let blocks = 0
      const drain = async (): Promise<void> => { for (const block of pending.splice(0)) { await sink(block.cid, block.bytes); blocks++ } }
      for await (const chunk of chunksOf(handle, signal)) {
        size += chunk.byteLength
        if (size > maxBytes) throw this.overCap(object.cid, maxBytes)
        builder.update(chunk)
        await drain()
      }
      const root = builder.finish().toString()
      if (root !== object.cid) throw new IntegrityError(`bytes of ${object.cid} in ${this.describe} hash to ${root}: the file was changed or damaged`)
      await drain()
      return { size, blocks }
    } finally {
      await handle.close()
    }
  }

  async has (cid: string, options: StoreCallOptions = {}): Promise<boolean> {
    return await this.stat(cid, options) !== undefined
  }

  async stat (cid: string, options: StoreCallOptions = {}): Promise<ObjectInfo | undefined> {
    options.signal?.throwIfAborted()
    await this.opened()
    if (canonical(cid) === undefined) return undefined
    // As a read finds it: a link is no object, whatever it leads to.
    const stats = await lstat(this.objectPath(cid)).catch(() => undefined)
    return stats?.isFile() === true ? { cid, size: stats.size, name: '', storedAt: stats.mtimeMs } : undefined
  }

  async * list (options: StoreCallOptions = {}): AsyncGenerator<ObjectInfo> {
    await this.opened()
    const objects = join(this.dir, 'objects')
    const shards = await readdir(objects).catch((err: NodeJS.ErrnoException) => {
      // A store whose objects/ was never made holds nothing yet.
      if (err.code === 'ENOENT') return [] as string[]
      throw err
    })
    for (const shard of shards.sort()) {
      options.signal?.throwIfAborted()
      if (!/^[a-z0-9]{2}$/.test(shard)) continue
      // A link put where a shard should be is not followed.
      if ((await lstat(join(objects, shard)).catch(() => undefined))?.isDirectory() !== true) continue
      for (const name of (await readdir(join(objects, shard)).catch(() => [] as string[])).sort()) {
        // Only files named by a CID ending in their shard's name: anything else is not an object.
        if (canonical(name) === undefined || !name.endsWith(shard)) continue
        const info = await this.stat(name, options)
        if (info !== undefined) yield info
      }
    }
  }

  async delete (cid: string, options: StoreCallOptions = {}): Promise<boolean> {
    if (await this.stat(cid, options) === undefined) return false
    await this.present()
    await this.inShard(cid, async (shard) => { await rm(shard.at(cid), { force: true }) })
    return true
  }

  async deleteMany (cids: readonly string[], options: DeleteOptions = {}): Promise<DeletedObjects> {
    const { storedBefore } = options
    const removed: string[] = []
    // Held once for the batch, when a delete first needs it.
    let tmp: HeldDir | undefined
    try {
      for (const cid of new Set(cids)) {
        if (storedBefore === undefined) {
          if (await this.delete(cid, options)) removed.push(cid)
          continue
        }
        // A put renames a new file into place: a later mtime is an object stored again since.
        if (!storedEarlier((await this.stat(cid, options))?.storedAt, storedBefore)) continue
        await this.present()
        tmp ??= await this.held('tmp')
        await this.tidyAsideOnce(tmp)
        try {
          if (await removeIfStoredBefore(tmp, this.shards, cid, storedBefore)) removed.push(cid)
        } catch (err) {
          // A delete that failed after its move may have left the object aside: the next one puts it back.
          this.asideTidied = false
          throw err
        }
      }
    } finally {
      await tmp?.close()
    }
    // A directory refuses no object: a file it cannot remove is the store's own failure, thrown.
    return { removed, refused: [] }
  }

  /** Puts back, once, the files that deletes of processes now gone left aside. */
  private async tidyAsideOnce (tmp: HeldDir): Promise<void> {
    if (this.asideTidied) return
    this.asideTidied = true
    await putBackDeadAsides(tmp, this.shards)
  }

  async close (): Promise<void> {}
}

/** Whether an object stored at `at` (unknown: not) was stored before `before`. */
function storedEarlier (at: number | undefined, before: number): boolean {
  return at !== undefined && at < before
}
