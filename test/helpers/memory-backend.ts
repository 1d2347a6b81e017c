import { readFile } from 'node:fs/promises'
import { Readable } from 'node:stream'
import { CID } from 'multiformats/cid'
import { CidBuilder, type CidProfile } from '../../src/content/index.js'
import { CidsyncError, ContentNotFoundError, IntegrityError, PointerNotFoundError } from '../../src/errors.js'
import { receiveVerified, type Backend, type BlockSink, type BlocksOptions, type BlocksRequest, type DeletedObjects, type DeleteOptions, type GetBytesOptions, type GetOptions, type GotObject, type ObjectHome, type ObjectInfo, type ObjectStore, type PointerRegistry, type PutOptions, type SourceTry, type StoreCallOptions, type StoredPointer } from '../../src/store/index.js'

/**
 * A backend that lives in this process's memory, for tests only: the proof that a backend is one
 * file and one registration. A `[[mirrors]]` table names it by `url = "memory://NAME"`.
 */

/** Its own failure: the home was dropped (as a disk pulled out). */
export class MemoryHomeGoneError extends CidsyncError {
  override readonly code = 'ERR_TEST_MEMORY_HOME_GONE'
  override readonly exitCode = 2
}

const MAX_BYTES = 64 * 1024 * 1024

function hashOf (bytes: Uint8Array, profile: CidProfile, onBlock?: (cid: CID, block: Uint8Array) => void): string {
  const builder = new CidBuilder(profile, onBlock === undefined ? {} : { onBlock })
  builder.update(bytes)
  return builder.finish().toString()
}

export class MemoryObjectStore implements ObjectStore {
  readonly objects = new Map<string, { bytes: Buffer, name: string, storedAt: number }>()
  gone = false
  constructor (readonly describe: string) {}

  private here (signal?: AbortSignal): void {
    signal?.throwIfAborted()
    if (this.gone) throw new MemoryHomeGoneError(`${this.describe} is gone`)
  }

  async put (path: string, profile: CidProfile, options: PutOptions = {}): Promise<{ cid: string, size: number }> {
    this.here(options.signal)
    const bytes = await readFile(path)
    const cid = hashOf(bytes, profile)
    if (options.expectedCid !== undefined && CID.parse(options.expectedCid).toString() !== cid) throw new IntegrityError(`${path} hashes to ${cid}, not ${options.expectedCid}`)
    options.onProgress?.({ type: 'store:put:progress', detail: { sent: bytes.byteLength, total: bytes.byteLength } })
    this.here(options.signal)
    this.objects.set(cid, { bytes, name: options.name ?? '', storedAt: Date.now() })
    return { cid, size: bytes.byteLength }
  }

  private held (cid: string, signal?: AbortSignal): Buffer {
    this.here(signal)
    const found = this.objects.get(cid)
    if (found === undefined) throw new ContentNotFoundError(`${this.describe} does not hold ${cid}`)
    return found.bytes
  }

  private async receive (cid: string, profile: CidProfile, destination: string | undefined, reader: ((bytes: Readable) => Promise<void>) | undefined, options: GetOptions): Promise<GotObject> {
    const bytes = this.held(cid, options.signal)
    const tried: SourceTry = { wrongBytes: false }
    const { onProgress, ...rest } = options
    const overCap = (cap: number): Error => new IntegrityError(`${cid} holds more than ${cap} bytes`)
    try {
      const got = await receiveVerified(async () => ({ stream: Readable.from([bytes]), total: bytes.byteLength, from: this.describe, origin: this.describe, overCap }), cid, profile, destination, reader,
        { ...rest, onProgress: onProgress === undefined ? undefined : (received, total) => { onProgress({ type: 'store:get:progress', detail: { received, total } }) } }, options.maxBytes ?? MAX_BYTES, tried)
      return { size: got.size, from: got.gateway }
    } catch (err) {
      throw tried.fatal?.err ?? err
    }
  }

  async getFile (cid: string, profile: CidProfile, destination: string, options: GetOptions = {}): Promise<GotObject> {
    return await this.receive(cid, profile, destination, undefined, options)
  }

  async getInto (cid: string, profile: CidProfile, reader: (bytes: Readable) => Promise<void>, options: GetOptions = {}): Promise<GotObject> {
    return await this.receive(cid, profile, undefined, reader, options)
  }

  async getBytes (cid: string, profile: CidProfile, options: GetBytesOptions = {}): Promise<Uint8Array[]> {
    const bytes = this.held(cid, options.signal)
    if (bytes.byteLength > (options.maxBytes ?? MAX_BYTES)) throw new IntegrityError(`${cid} holds more than ${options.maxBytes ?? MAX_BYTES} bytes`)
    if (hashOf(bytes, profile) !== cid) throw new IntegrityError(`bytes of ${cid} in ${this.describe} hash to another CID`)
    return [Uint8Array.prototype.slice.call(bytes)]
  }

  async blocks<T extends BlocksRequest> (objects: AsyncIterable<T>, sink: BlockSink, options: BlocksOptions<T> = {}): Promise<void> {
    for await (const object of objects) {
      try {
        const bytes = this.held(object.cid, options.signal)
        const blocks: Array<{ cid: CID, bytes: Uint8Array }> = []
        const root = hashOf(bytes, object.profile, (cid, block) => { blocks.push({ cid, bytes: Uint8Array.prototype.slice.call(block) }) })
        if (root !== object.cid) throw new IntegrityError(`bytes of ${object.cid} in ${this.describe} hash to ${root}`)
        for (const block of blocks) await sink(block.cid, block.bytes)
        options.onObject?.(object, { size: bytes.byteLength, blocks: blocks.length })
      } catch (err) {
        throw options.failure?.(object, err) ?? err
      }
    }
  }

  async has (cid: string, options: StoreCallOptions = {}): Promise<boolean> {
    return await this.stat(cid, options) !== undefined
  }

  async stat (cid: string, options: StoreCallOptions = {}): Promise<ObjectInfo | undefined> {
    this.here(options.signal)
    const found = this.objects.get(cid)
    return found === undefined ? undefined : { cid, size: found.bytes.byteLength, name: found.name, storedAt: found.storedAt }
  }

  async * list (options: StoreCallOptions = {}): AsyncGenerator<ObjectInfo> {
    this.here(options.signal)
    const newest = [...this.objects.entries()].sort((a, b) => b[1].storedAt - a[1].storedAt)
    for (const [cid, o] of newest) yield { cid, size: o.bytes.byteLength, name: o.name, storedAt: o.storedAt }
  }

  async delete (cid: string, options: StoreCallOptions = {}): Promise<boolean> {
    this.here(options.signal)
    return this.objects.delete(cid)
  }

  async deleteMany (cids: readonly string[], options: DeleteOptions = {}): Promise<DeletedObjects> {
    const removed: string[] = []
    for (const cid of new Set(cids)) {
      const at = this.objects.get(cid)?.storedAt
      if (options.storedBefore !== undefined && !(at !== undefined && at < options.storedBefore)) continue
      if (await this.delete(cid, options)) removed.push(cid)
    }
    return { removed, refused: [] }
  }

  async close (): Promise<void> {}
}

export class MemoryPointers implements PointerRegistry {
  readonly pointers = new Map<string, StoredPointer>()
  constructor (private readonly store: MemoryObjectStore) {}

  async current (namespace: string, network: string, options: StoreCallOptions = {}): Promise<StoredPointer> {
    options.signal?.throwIfAborted()
    if (this.store.gone) throw new MemoryHomeGoneError(`${this.store.describe} is gone`)
    const found = this.pointers.get(JSON.stringify([namespace, network]))
    if (found === undefined) throw new PointerNotFoundError(namespace, network)
    return { ...found }
  }

  async put (input: StoredPointer, options: StoreCallOptions = {}): Promise<void> {
    options.signal?.throwIfAborted()
    if (this.store.gone) throw new MemoryHomeGoneError(`${this.store.describe} is gone`)
    let canonical = false
    try { canonical = CID.parse(input.snapshotCid).toString() === input.snapshotCid } catch { /* not a CID */ }
    if (!canonical) throw new IntegrityError(`refused a pointer naming ${JSON.stringify(input.snapshotCid.slice(0, 100))}: not a CID`)
    this.pointers.set(JSON.stringify([input.namespace, input.network]), { ...input })
  }
}

export interface MemoryHome extends ObjectHome {
  readonly objects: MemoryObjectStore
  readonly pointers: MemoryPointers
}

/** A fresh home, not reachable by any URL. */
export function memoryHome (describe = 'a memory store'): MemoryHome {
  const objects = new MemoryObjectStore(describe)
  return { objects, pointers: new MemoryPointers(objects) }
}

/** Every home a `memory://NAME` URL has named in this process. */
export const memoryHomes = new Map<string, MemoryHome>()

export const memoryBackend: Backend = {
  kind: 'memory',
  noun: 'memory store',
  location: { schemes: ['memory'] },
  offers: { names: false, deals: false },
  failed: (err) => err instanceof MemoryHomeGoneError,
  advice: (err, name) => err instanceof MemoryHomeGoneError ? `mirror ${name}'s memory store is gone: copying resumes once it is back` : undefined,
  open: ({ mirror }) => {
    const url = mirror.url ?? ''
    let home = memoryHomes.get(url)
    if (home === undefined) memoryHomes.set(url, home = memoryHome(`the memory store ${url}`))
    const opened = home
    return { home: opened, ready: async () => { if (opened.objects.gone) throw new MemoryHomeGoneError(`${url} is gone`) }, close: async () => {} }
  }
}
