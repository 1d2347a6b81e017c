import type { Readable } from 'node:stream'
import type { CidProfile } from '../content/index.js'
import { InternalError } from '../errors.js'
import type {
  BlockSink, BlocksOptions, BlocksRequest, DeletedObjects, DeleteOptions, GetBytesOptions, GetOptions, GotObject, ListOptions,
  ObjectInfo, ObjectStore, PutOptions, StoreCallOptions
} from '../store/index.js'
import { EmbeddedObjectStore } from './embedded-store.js'

type HeldAmong = (cids: ReadonlySet<string>, options: StoreCallOptions) => Promise<ReadonlySet<string>>

/**
 * The embedded service's objects before the service is started: the first call starts it and
 * every call goes to its store ({@link EmbeddedObjectStore}). Only which uploads the account lists
 * is read in process first (`held`), by the query the service itself answers it with.
 */
export class LazyEmbeddedObjects implements ObjectStore {
  readonly stream: ObjectStore['stream']

  /** `describe`: the service's words before it is started (its URL is known only then). */
  constructor (
    private readonly started: () => Promise<ObjectStore>,
    private readonly held: (cids: ReadonlySet<string>) => ReadonlySet<string> | undefined,
    readonly describe: string
  ) {
    this.stream = async function * (cid, options) {
      const objects = await started()
      // Started on this thread, its store always streams (connect/embedded.ts).
      if (objects.stream === undefined) throw new InternalError('the embedded service was started without reads in this process')
      yield * objects.stream(cid, options)
    }
  }

  /** {@link EmbeddedObjectStore.heldAmong}: the same pass over the account's uploads, here without a start. */
  async heldAmong (cids: ReadonlySet<string>, options: StoreCallOptions = {}): Promise<ReadonlySet<string>> {
    return this.held(cids) ?? await (heldAmongOf(await this.started()) as HeldAmong)(cids, options)
  }

  async put (path: string, profile: CidProfile, options?: PutOptions): Promise<{ cid: string, size: number }> { return await (await this.started()).put(path, profile, options) }
  async getFile (cid: string, profile: CidProfile, destination: string, options?: GetOptions): Promise<GotObject> { return await (await this.started()).getFile(cid, profile, destination, options) }
  async getInto (cid: string, profile: CidProfile, reader: (bytes: Readable) => Promise<void>, options?: GetOptions): Promise<GotObject> { return await (await this.started()).getInto(cid, profile, reader, options) }
  async getBytes (cid: string, profile: CidProfile, options?: GetBytesOptions): Promise<Uint8Array[]> { return await (await this.started()).getBytes(cid, profile, options) }
  async blocks<T extends BlocksRequest> (objects: AsyncIterable<T>, sink: BlockSink, options?: BlocksOptions<T>): Promise<void> { await (await this.started()).blocks(objects, sink, options) }
  async has (cid: string, options?: StoreCallOptions): Promise<boolean> { return await (await this.started()).has(cid, options) }
  async stat (cid: string, options?: StoreCallOptions): Promise<ObjectInfo | undefined> { return await (await this.started()).stat(cid, options) }
  async * list (options?: ListOptions): AsyncGenerator<ObjectInfo> { yield * (await this.started()).list(options) }
  async delete (cid: string, options?: StoreCallOptions): Promise<boolean> { return await (await this.started()).delete(cid, options) }
  async deleteMany (cids: readonly string[], options?: DeleteOptions): Promise<DeletedObjects> { return await (await this.started()).deleteMany(cids, options) }
  /** The started service's owner closes it (connect/embedded-reads.ts). */
  async close (): Promise<void> {}
}

/**
 * The embedded store's `heldAmong` for `objects`, when they are one (started or not); else
 * undefined (ask the store as it answers).
 */
export function heldAmongOf (objects: ObjectStore): HeldAmong | undefined {
  return objects instanceof EmbeddedObjectStore || objects instanceof LazyEmbeddedObjects ? async (cids, options) => await objects.heldAmong(cids, options) : undefined
}
