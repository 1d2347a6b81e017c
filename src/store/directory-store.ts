import { constants } from 'node:fs'
import { open, readdir, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import { CID } from 'multiformats/cid'
import { CidBuilder, type CidProfile } from '../content/index.js'
import { ContentNotFoundError, DirectoryStoreError, IntegrityError } from '../errors.js'
import { fsyncPath } from '../util/fsync.js'
import { makeDirs } from '../util/make-dirs.js'
import { processAlive } from '../util/process-alive.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import type {
  BlockSink, BlocksOptions, BlocksRequest, GetBytesOptions, GetOptions, GotObject, ObjectInfo,
  ObjectStore, PutOptions, StoreCallOptions
} from './object-store.js'
import { defaultSlab, fillSlabs, hashed, TooLarge } from './slabs.js'
import { receiveVerified, type SourceTry } from './verified-receive.js'

/** What the marker file says: a directory cidsync made for objects, in this layout. */
export const DIRECTORY_STORE_FORMAT = 'cidsync-directory/1'
const MARKER = 'cidsync-store.json'
const READ_BYTES = 1024 * 1024
/** The most a read takes when the caller names no size. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024 * 1024

/** A file's chunks, stopping at an abort between them. */
async function * chunksOf (handle: FileHandle, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
  for await (const chunk of handle.createReadStream({ highWaterMark: READ_BYTES, autoClose: false }) as AsyncIterable<Buffer>) {
    signal?.throwIfAborted()
    yield chunk
  }
}

/** A CID's text as this store names files, or undefined for text that is not a canonical CID. */
function canonical (text: string): string | undefined {
  try {
    const cid = CID.parse(text)
    return cid.toString() === text ? text : undefined
  } catch {
    return undefined
  }
}

/**
 * Objects kept as plain files in a directory: a USB disk, a NAS mount. Each object is one file,
 * `objects/<last two characters of its CID>/<CID>`, holding the object's bytes; its blocks are
 * made again from them under its profile when an export asks. Nothing here is trusted: every
 * read is hashed to the CID, and only regular files are opened (a link or a FIFO is not
 * followed). Crash rules as the pack store's: a put writes a temp file in `tmp/`, fsyncs it,
 * renames it into place and fsyncs the directory. A put killed midway leaves only a temp file,
 * removed at the next open once its process is gone. Files 0600, directories 0700.
 */
export class DirectoryObjectStore implements ObjectStore {
  readonly describe: string

  private ready: Promise<void> | undefined
  /** Whether an open may make the store: only until it first opens, so a pulled disk's mount point is never filled. */
  private creates: boolean

  /**
   * The store at `dir`, opened at its first use (nothing is read before): a directory without
   * the marker is refused then, unless `create` makes the store. Once open, it is never made again.
   */
  constructor (readonly dir: string, options: { readonly create?: boolean } = {}) {
    this.describe = `the directory store ${dir}`
    this.creates = options.create === true
  }

  /** Opens the store at `dir` now. */
  static async open (dir: string, options: { readonly create?: boolean } = {}): Promise<DirectoryObjectStore> {
    const store = new DirectoryObjectStore(dir, options)
    await store.opened()
    return store
  }

  /** The marker checked (or written), the folders made, dead temps removed: once. */
  async opened (): Promise<void> {
    this.ready ??= this.openNow()
    // A failed open (a disk not mounted yet) is tried again at the next use.
    await this.ready.catch((err: unknown) => { this.ready = undefined; throw err })
    await this.stillThere()
  }

  /**
   * The marker, checked again at every use. A disk pulled out after the open leaves an empty
   * mount point: nothing may be written there in the disk's place, and the error says to mount it.
   */
  private async stillThere (): Promise<void> {
    const marker = join(this.dir, MARKER)
    try {
      await stat(marker)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new DirectoryStoreError(`could not read ${marker}: ${(err as Error).message}`, { cause: err })
      this.ready = undefined
      throw this.notAStore(err)
    }
  }

  private notAStore (cause?: unknown): DirectoryStoreError {
    return new DirectoryStoreError(`${this.dir} is not a cidsync directory store (no ${MARKER}): check the path and that its disk is mounted`, { cause })
  }

  private async openNow (): Promise<void> {
    const { dir } = this
    const marker = join(dir, MARKER)
    const text = await readFile(marker, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw new DirectoryStoreError(`could not read ${marker}: ${err.message}`, { cause: err })
      return undefined
    })
    if (text === undefined) {
      if (!this.creates) throw this.notAStore()
      await makeDirs(dir, 0o700)
      writeFileAtomicSync(marker, JSON.stringify({ format: DIRECTORY_STORE_FORMAT }) + '\n', { mode: 0o600 })
    } else {
      let format: unknown
      try { format = (JSON.parse(text) as { format?: unknown }).format } catch { format = undefined }
      if (format !== DIRECTORY_STORE_FORMAT) throw new DirectoryStoreError(`${marker} names another format than ${DIRECTORY_STORE_FORMAT}: a newer cidsync made it, or it is not cidsync's`)
    }
    await makeDirs(join(dir, 'objects'), 0o700)
    await makeDirs(join(dir, 'tmp'), 0o700)
    await this.removeDeadTemps()
    this.creates = false
  }

  private objectPath (cid: string): string {
    return join(this.dir, 'objects', cid.slice(-2), cid)
  }

  /** Temp files of puts whose process is gone. */
  private async removeDeadTemps (): Promise<void> {
    for (const name of await readdir(join(this.dir, 'tmp'))) {
      const pid = Number(/^(\d+)-[0-9a-f]+\.part$/.exec(name)?.[1])
      if (Number.isInteger(pid) && pid !== process.pid && !processAlive(pid)) await rm(join(this.dir, 'tmp', name), { force: true })
    }
  }

  async put (path: string, profile: CidProfile, options: PutOptions = {}): Promise<{ cid: string, size: number }> {
    await this.opened()
    const temp = join(this.dir, 'tmp', `${process.pid}-${randomBytes(8).toString('hex')}.part`)
    const builder = new CidBuilder(profile)
    const out = await open(temp, 'wx', 0o600).catch(async (err: unknown) => {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') await this.stillThere()
      throw err
    })
    let closed = false
    try {
      const source = await open(path, 'r')
      let sent = 0
      try {
        const { size: total } = await source.stat()
        for await (const chunk of chunksOf(source, options.signal)) {
          await options.throttle?.(chunk.byteLength, options.signal)
          builder.update(chunk)
          await out.write(chunk)
          sent += chunk.byteLength
          options.onProgress?.({ type: 'store:put:progress', detail: { sent, total } })
        }
      } finally {
        await source.close()
      }
      await out.sync()
      await out.close()
      closed = true
      const cid = builder.finish().toString()
      if (options.expectedCid !== undefined && CID.parse(options.expectedCid).toString() !== cid) {
        throw new IntegrityError(`${path} hashes to ${cid} under ${profile.name}, not ${options.expectedCid}: it changed after it was hashed`)
      }
      options.signal?.throwIfAborted()
      const target = this.objectPath(cid)
      await makeDirs(dirname(target), 0o700)
      await rename(temp, target)
      await fsyncPath(dirname(target))
      await fsyncPath(dirname(dirname(target)))
      return { cid, size: sent }
    } catch (err) {
      if (!closed) await out.close().catch(() => {})
      await rm(temp, { force: true })
      // The disk pulled out midway: said as such, not as a file that went missing.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') await this.stillThere()
      throw err
    }
  }

  /** The object's file, opened only when it is a regular file (never a link, a FIFO, a device). */
  private async openObject (cid: string): Promise<{ handle: FileHandle, size: number }> {
    await this.opened()
    if (canonical(cid) === undefined) throw new IntegrityError(`${JSON.stringify(cid.slice(0, 100))} is not a CID`)
    let handle: FileHandle
    try {
      handle = await open(this.objectPath(cid), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ELOOP') throw new ContentNotFoundError(`${this.describe} does not hold ${cid}`, { cause: err })
      throw err
    }
    const stats = await handle.stat()
    if (!stats.isFile()) {
      await handle.close()
      throw new ContentNotFoundError(`${this.describe} does not hold ${cid}: its entry is not a regular file`)
    }
    return { handle, size: stats.size }
  }

  private async receive (cid: string, profile: CidProfile, destination: string | undefined, reader: ((bytes: Readable) => Promise<void>) | undefined, options: GetOptions): Promise<GotObject> {
    const tried: SourceTry = { wrongBytes: false }
    const { onProgress, ...rest } = options
    const progress = onProgress === undefined ? undefined : (received: number, total: number | undefined): void => { onProgress({ type: 'store:get:progress', detail: { received, total } }) }
    const { handle, size } = await this.openObject(cid)
    try {
      const got = await receiveVerified(async () => ({
        stream: handle.createReadStream({ highWaterMark: READ_BYTES, autoClose: false }),
        total: size,
        from: `${this.describe} (${cid})`,
        origin: this.describe,
        overCap: (cap) => new IntegrityError(`${cid} in ${this.describe} holds more than the ${cap} bytes it was expected to: not that object`)
      }), cid, profile, destination, reader, { ...rest, onProgress: progress }, options.maxBytes ?? DEFAULT_MAX_BYTES, tried)
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
    const { handle } = await this.openObject(cid)
    try {
      const builder = new CidBuilder(profile)
      const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES
      const filled = await fillSlabs(hashed(chunksOf(handle, options.signal), builder), maxBytes, options.slab ?? defaultSlab)
        .catch((err: unknown) => { throw err instanceof TooLarge ? new IntegrityError(`${cid} in ${this.describe} holds more than the ${maxBytes} bytes it was expected to: not that object`) : err })
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
    const { handle } = await this.openObject(object.cid)
    try {
      const pending: Array<{ cid: CID, bytes: Uint8Array }> = []
      // Copied: the builder reuses its buffers.
      const builder = new CidBuilder(object.profile, { onBlock: (cid, bytes) => { pending.push({ cid, bytes: Uint8Array.prototype.slice.call(bytes) }) } })
      const maxBytes = object.maxBytes ?? DEFAULT_MAX_BYTES
      let size = 0
      let blocks = 0
      const drain = async (): Promise<void> => { for (const block of pending.splice(0)) { await sink(block.cid, block.bytes); blocks++ } }
      for await (const chunk of chunksOf(handle, signal)) {
        size += chunk.byteLength
        if (size > maxBytes) throw new IntegrityError(`${object.cid} in ${this.describe} holds more than the ${maxBytes} bytes it was expected to: not that object`)
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
    const stats = await stat(this.objectPath(cid)).catch(() => undefined)
    return stats?.isFile() === true ? { cid, size: stats.size, name: '', storedAt: stats.mtimeMs } : undefined
  }

  async * list (options: StoreCallOptions = {}): AsyncGenerator<ObjectInfo> {
    await this.opened()
    const objects = join(this.dir, 'objects')
    for (const shard of (await readdir(objects)).sort()) {
      options.signal?.throwIfAborted()
      if (!/^[a-z0-9]{2}$/.test(shard)) continue
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
    const path = this.objectPath(cid)
    await rm(path, { force: true })
    await fsyncPath(dirname(path))
    return true
  }

  async close (): Promise<void> {}
}
