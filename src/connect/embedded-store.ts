import { stat } from 'node:fs/promises'
import { Readable } from 'node:stream'
import { CID } from 'multiformats/cid'
import { CidBuilder, type CidProfile } from '../content/index.js'
import { AbortedError, ContentNotFoundError, IntegrityError, InternalError, RemoteBadRequestError, RemoteStatusError, ServiceDataDamagedError, type RemoteContext } from '../errors.js'
import type { DeleteWalk, ListedUpload, ServiceThread } from '../local-service/index.js'
import { addQuery, ANSWER_LIMITS, canonicalCid, fetchOptions, uploadTime } from '../remote/index.js'
import {
  BlockHasher, BlockSlots, defaultSlab, fillSlabs, hashed, receiveVerified, storedFileBytes, storedFileRange, walkStoredObjects,
  type BlockSink, type BlocksOptions, type BlocksRequest, type GetBytesOptions, type GetOptions, type GotObject,
  type DeletedObjects, type DeleteOptions, type ObjectInfo, type ObjectStore, type PutOptions, type ReadStoredBlock, type ReadStoredRun, type SourceTry,
  type ListOptions, type StoreCallOptions, type StreamOptions
} from '../store/index.js'

/** Reads the service's blocks in this process: only where the service runs on this thread. */
export interface LocalReads {
  readonly block: ReadStoredBlock
  readonly run: ReadStoredRun
  /** Which of the CIDs the account of the API key lists (`LocalService.heldFiles`). */
  readonly held?: (apiKey: string, cids: ReadonlySet<string>) => Set<string> | undefined
  /**
   * The account's listing and deletes in this process (`LocalService.listUploads`, `deleteUploads`);
   * absent where faults may be set on the service's routes (its admin routes on), which only HTTP meets.
   */
  readonly uploads?: LocalUploads
}

/** The account's uploads in this process; undefined for an API key the service does not know. */
export interface LocalUploads {
  readonly page: (apiKey: string, beforeSeq: number | undefined) => { uploads: ListedUpload[], lastSeq: number | undefined } | undefined
  readonly remove: (apiKey: string, cids: readonly string[], walk: DeleteWalk) => string[] | undefined
  /** The account's newest upload of the CID; null for none. */
  readonly newest: (apiKey: string, cid: string) => ListedUpload | null | undefined
}

const READ_BYTES = 1024 * 1024
const FROM_STORE = 'the service\'s store'

/** What an in-process refusal would have been over HTTP, as `HttpClient` makes it from a status. */
function refusal (context: RemoteContext, err: unknown): Error {
  const e = err as Error & { status?: unknown, code?: unknown }
  const status = typeof e.status === 'number' ? e.status : 500
  const excerpt = typeof e.status === 'number' || typeof e.code !== 'string' ? e.message : `${e.code}: ${e.message}`
  if (status === 400 || status === 422) return new RemoteBadRequestError(context, status, excerpt, '')
  if (status === 429) return new RemoteStatusError(context, status, excerpt, 'the service is limiting requests: try again later')
  return new RemoteStatusError(context, status, excerpt, status >= 500 ? 'the service failed: try again later' : '')
}

/**
 * Whether a read from the store in this process should be tried again over HTTP: not for an
 * abort, nor for a data dir that lost what it indexed (its own gateway could only answer a 500).
 * Missing or damaged bytes go on to the gateway, which fails them with its usual error.
 */
function fallBack (err: unknown, signal: AbortSignal | undefined): void {
  if (err instanceof ServiceDataDamagedError) throw err
  signal?.throwIfAborted()
}

/**
 * Asks the gateway after a read here failed. The embedded service's gateway reads the same packs:
 * where the read here found damage or a block missing, the gateway's own failure says less (a 502
 * over the damaged node, a connection cut midway: "try again later"; a loopback URL the user never
 * set). What the read here found is the answer then, unless the gateway's bytes verified.
 */
async function orDamageFound<T> (local: unknown, signal: AbortSignal | undefined, gateway: () => Promise<T>): Promise<T> {
  try {
    return await gateway()
  } catch (err) {
    if ((local instanceof IntegrityError || local instanceof ContentNotFoundError) && signal?.aborted !== true) throw local
    throw err
  }
}

/**
 * The embedded service's objects, kept in its pack store in this process. A put is added by the
 * code the upload route runs after parsing a request (the same quota, durability and listing),
 * without loopback HTTP. Reads come from the packs when the service runs on this thread, through
 * the same checks as a gateway's answer; what they cannot give is asked of its gateway. Its
 * listing and deletes are read and made here too, a batch of deletes in one commit, unless faults
 * may be set on its routes; then, and on a thread of its own, they go through its API.
 */
export class EmbeddedObjectStore implements ObjectStore {
  readonly describe: string
  readonly stream?: ObjectStore['stream']
  /** The slots `getBytes` reads blocks into, used again by every call: each block is copied into a slab before the next is read. */
  private readonly byteSlots = new BlockSlots(LENT_SLOTS)

  constructor (private readonly overHttp: ObjectStore, private readonly service: Pick<ServiceThread, 'addFile'>, private readonly apiKey: () => string | undefined, private readonly local?: LocalReads) {
    this.describe = overHttp.describe
    if (local !== undefined) this.stream = async function * (cid, options) { yield * checkedStream(local.block, cid, options) }
  }

  async put (path: string, profile: CidProfile, options: PutOptions = {}): Promise<{ cid: string, size: number }> {
    const { size } = await stat(path)
    const context = { service: 'upload endpoint', method: 'POST', url: `${this.overHttp.describe}/api/v0/add?${new URLSearchParams(addQuery(profile)).toString()} (in process)` }
    if (options.throttle !== undefined) for (let at = 0; at < size; at += READ_BYTES) await options.throttle(Math.min(READ_BYTES, size - at), options.signal)
    if (options.signal?.aborted === true) throw new AbortedError(`${context.method} ${context.url} was aborted`)
    const apiKey = this.apiKey()
    if (apiKey === undefined) throw refusal(context, new InternalError('the embedded service was asked to store a file before its account was known'))
    let answer: { cid: string, size: number }
    try {
      answer = await this.service.addFile({ path, profile, apiKey, expectedCid: options.expectedCid, blocks: options.blocks, name: options.name })
    } catch (err) {
      throw refusal(context, err)
    }
    options.onProgress?.({ type: 'store:put:progress', detail: { sent: size, total: size } })
    if (options.expectedCid !== undefined && answer.cid !== CID.parse(options.expectedCid).toString()) {
      throw new IntegrityError(`the upload endpoint computed ${answer.cid} for ${path}, cidsync computed ${options.expectedCid}: the service imported with other parameters than ${profile.name}`)
    }
    return { cid: answer.cid, size }
  }

  async getFile (cid: string, profile: CidProfile, destination: string, options: GetOptions = {}): Promise<GotObject> {
    const here = await this.receive(cid, profile, destination, undefined, options)
    return here.got ?? await orDamageFound(here.failed, options.signal, async () => await this.overHttp.getFile(cid, profile, destination, options))
  }

  async getInto (cid: string, profile: CidProfile, reader: (bytes: Readable) => Promise<void>, options: GetOptions = {}): Promise<GotObject> {
    const here = await this.receive(cid, profile, undefined, reader, options)
    return here.got ?? await orDamageFound(here.failed, options.signal, async () => await this.overHttp.getInto(cid, profile, reader, options))
  }

  /** The object from the packs through the same checks as a gateway's answer; else why not, to ask the gateway. */
  private async receive (cid: string, profile: CidProfile, destination: string | undefined, reader: ((bytes: Readable) => Promise<void>) | undefined, options: GetOptions): Promise<{ got?: GotObject, failed?: unknown }> {
    const read = this.local?.block
    if (read === undefined) return {}
    canonicalCid(cid)
    const tried: SourceTry = { wrongBytes: false }
    try {
      const got = await receiveVerified(async () => ({
        stream: Readable.from(storedFileBytes(read, CID.parse(cid), options.signal)),
        total: undefined,
        from: FROM_STORE,
        origin: FROM_STORE,
        overCap: (cap) => new IntegrityError(`${cid} in the service's store holds more than the ${cap} bytes it was expected to: not that object`)
      }), cid, profile, destination, reader, fetchOptions(options), options.maxBytes ?? ANSWER_LIMITS.fetch, tried)
      return { got: { size: got.size, from: got.gateway } }
    } catch (err) {
      if (tried.fatal !== undefined) throw tried.fatal.err
      fallBack(err, options.signal)
      return { failed: err }
    }
  }

  async getBytes (cid: string, profile: CidProfile, options: GetBytesOptions = {}): Promise<Uint8Array[]> {
    const read = this.local?.block
    if (read !== undefined) {
      canonicalCid(cid)
      try {
        const sealed = options.sealed === true
        const blocks = storedFileBytes(read, CID.parse(cid), options.signal, sealed ? 'nodes' : false, this.byteSlots)
        const maxBytes = options.maxBytes ?? ANSWER_LIMITS.fetch
        const slab = options.slab ?? defaultSlab
        let filled: Uint8Array[]
        let got: string
        if (sealed) {
          // The caller opens each blob and hashes its plaintext: hashing the leaves here would add nothing.
          filled = await fillSlabs(blocks, maxBytes, slab)
          got = cid
        } else if (options.hashing !== undefined) {
          // Each slab hashed where the caller says while the next is read.
          const hashing = options.hashing()
          try {
            filled = await fillSlabs(blocks, maxBytes, slab, undefined, hashing.update)
          } catch (err) {
            // Ended, so the thread lets the job go; its answer is of no use.
            hashing.finish().catch(() => {})
            throw err
          }
          got = await hashing.finish()
        } else if (options.hash === undefined) {
          // Hashed here as each block is read: the object is verified as soon as its last block is in.
          const builder = new CidBuilder(profile)
          filled = await fillSlabs(hashed(blocks, builder), maxBytes, slab)
          got = builder.finish().toString()
        } else {
          // Hashed where the caller says (a thread): this one reads the next object meanwhile.
          filled = await fillSlabs(blocks, maxBytes, slab)
          got = await options.hash(filled)
        }
        if (got !== cid) throw new IntegrityError(`bytes from the service's store hash to ${got}, not ${cid}`)
        return filled
      } catch (err) {
        fallBack(err, options.signal)
        return await orDamageFound(err, options.signal, async () => await this.overHttp.getBytes(cid, profile, options))
      }
    }
    return await this.overHttp.getBytes(cid, profile, options)
  }

  async blocks<T extends BlocksRequest> (objects: AsyncIterable<T>, sink: BlockSink, options: BlocksOptions<T> = {}): Promise<void> {
    if (this.local === undefined) { await this.overHttp.blocks(objects, sink, options); return }
    // Hashed on a thread of its own (this one reads, compares and copies), read into a few
    // slots used again and again; the next object's blocks are read while this one is written.
    const hasher = new BlockHasher()
    try {
      const parsed = async function * (): AsyncGenerator<{ cid: CID, maxBytes?: number, object: T }> {
        for await (const object of objects) yield { cid: CID.parse(object.cid), maxBytes: object.maxBytes, object }
      }
      await walkStoredObjects(this.local.block, parsed(), sink, {
        signal: options.signal, hasher, slots: new BlockSlots(16), readRun: this.local.run,
        onObject: ({ object }, walked) => { options.onObject?.(object, walked) },
        failure: ({ object }, err) => options.failure?.(object, err) ?? err
      })
    } finally {
      await hasher.close()
    }
  }

  /**
   * Which of `cids` the account lists, all in one pass: read in this process when the service runs
   * on this thread, else from one pass of its listing (its `has` reads the listing for each).
   */
  async heldAmong (cids: ReadonlySet<string>, options: StoreCallOptions = {}): Promise<ReadonlySet<string>> {
    const apiKey = this.apiKey()
    const local = apiKey === undefined ? undefined : this.local?.held?.(apiKey, cids)
    if (local !== undefined) return local
    const found = new Set<string>()
    if (cids.size === 0) return found
    for await (const object of this.list(options)) {
      if (!cids.has(object.cid)) continue
      found.add(object.cid)
      if (found.size === cids.size) break
    }
    return found
  }

  async has (cid: string, options?: StoreCallOptions): Promise<boolean> { return await this.stat(cid, options) !== undefined }

  async stat (cid: string, options?: StoreCallOptions): Promise<ObjectInfo | undefined> {
    const uploads = this.local?.uploads
    if (uploads === undefined) return await this.overHttp.stat(cid, options)
    options?.signal?.throwIfAborted()
    // The newest upload of it, as a walk of the listing finds it first.
    const newest = uploads.newest(this.knownKey(), cid)
    if (newest === undefined) throw unknownKey('GET', '/api/user/files_uploaded')
    return newest === null ? undefined : listedInfo(newest)
  }

  async * list (options: ListOptions = {}): AsyncGenerator<ObjectInfo> {
    const uploads = this.local?.uploads
    if (uploads === undefined) { yield * this.overHttp.list(options); return }
    const apiKey = this.knownKey()
    const seen = new Set<string>()
    let beforeSeq: number | undefined
    do {
      options.signal?.throwIfAborted()
      const page = uploads.page(apiKey, beforeSeq)
      if (page === undefined) throw unknownKey('GET', '/api/user/files_uploaded')
      for (const upload of page.uploads) {
        const info = listedInfo(upload)
        options.onUpload?.(upload.cid, { id: upload.id, ...uploadTime(info.storedAt) })
        // An object uploaded twice is listed twice by the service; once here.
        if (seen.has(upload.cid)) continue
        seen.add(upload.cid)
        yield info
      }
      beforeSeq = page.lastSeq
    } while (beforeSeq !== undefined)
  }

  async delete (cid: string, options?: StoreCallOptions): Promise<boolean> {
    if (this.local?.uploads === undefined) return await this.overHttp.delete(cid, options)
    return (await this.deleteMany([cid], options)).removed.length > 0
  }

  async deleteMany (cids: readonly string[], options: DeleteOptions = {}): Promise<DeletedObjects> {
    const uploads = this.local?.uploads
    if (uploads === undefined) return await this.overHttp.deleteMany(cids, options)
    options.signal?.throwIfAborted()
    // The walk's uploads of these objects only: it may have read the whole listing.
    const seen = options.seen?.uploads
    const walked = seen === undefined ? undefined : new Map(cids.flatMap(cid => { const list = seen.get(cid); return list === undefined ? [] : [[cid, new Set(list.map(u => u.id))] as const] }))
    const removed = uploads.remove(this.knownKey(), cids, { storedBefore: options.storedBefore, walked })
    if (removed === undefined) throw unknownKey('DELETE', '/api/user/delete_file')
    return { removed, refused: [] }
  }

  /** The account's API key, known once the embedded service signed in. */
  private knownKey (): string {
    const apiKey = this.apiKey()
    if (apiKey === undefined) throw new InternalError('the embedded service was asked for its uploads before its account was known')
    return apiKey
  }
  async close (): Promise<void> { await this.overHttp.close() }
}

/** Slots a lent stream reads its leaves into: the reads ahead of a level, the leaf given out, and a spare. */
const LENT_SLOTS = 8

/** Each block checked against its CID before any of it comes out; at most `maxBytes` in all. */
async function * checkedStream (read: ReadStoredBlock, cid: string, options: StreamOptions): AsyncGenerator<Uint8Array> {
  canonicalCid(cid)
  if (options.range !== undefined) {
    if (options.range.offset + options.range.length > options.maxBytes) throw new IntegrityError(`bytes ${options.range.offset}-${options.range.offset + options.range.length} of ${cid} lie past the ${options.maxBytes} bytes it may hold`)
    yield * storedFileRange(read, CID.parse(cid), options.range, options.signal, options.sealed !== true)
    return
  }
  let received = 0
  // Lent: a few slots read into again and again (the reads ahead and the block given out).
  const slots = options.lend === true ? new BlockSlots(LENT_SLOTS) : undefined
  for await (const chunk of storedFileBytes(read, CID.parse(cid), options.signal, options.sealed === true ? 'nodes' : true, slots)) {
    received += chunk.byteLength
    if (received > options.maxBytes) throw new IntegrityError(`${cid} in the service's store holds more than the ${options.maxBytes} bytes it was expected to: not that object`)
    yield chunk
  }
}

/** An upload as the listing's record gives it through `ServiceObjectStore`. */
function listedInfo (upload: ListedUpload): ObjectInfo {
  return { cid: upload.cid, size: upload.size, name: upload.name, ...uploadTime(upload.createdAt) }
}

/** The 401 the route would answer for a key the service does not know. */
function unknownKey (method: string, path: string): Error {
  return new RemoteStatusError({ service: 'files endpoint', method, url: `${path} (in process)` }, 401, 'the embedded service does not know its own API key', 'sign in again: `cidsync login`')
}
