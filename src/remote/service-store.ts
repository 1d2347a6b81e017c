import type { Readable } from 'node:stream'
import type { CidProfile } from '../content/index.js'
import { RemoteStatusError } from '../errors.js'
import { boundedLine } from '../util/safe-text.js'
import type {
  BlockSink, BlocksOptions, BlocksRequest, DeletedObjects, DeleteOptions, DeleteRefusal, GetBytesOptions, GetOptions, GotObject, ListOptions, ObjectInfo,
  ObjectStore, PutOptions, StoreCallOptions
} from '../store/index.js'
import type { FetchOptions, GatewayClient } from './gateway-client.js'
import type { HttpClient } from './http-client.js'
import { deleteUpload, listFiles } from './files-client.js'
import type { FileRecord } from './schemas.js'
import type { UploadClient, UploadOptions } from './upload-client.js'

/**
 * Before this (2001-09-09, ms), an upload time is not one in milliseconds: most likely seconds.
 * Read as ms, every upload would look decades old, and a prune's margin would protect none.
 */
const EARLIEST_UPLOAD_MS = 1_000_000_000_000

/** A listed upload's time as an optional field: one that cannot be a time in ms is unknown. */
export function uploadTime (at: number | undefined): { storedAt?: number } {
  return at === undefined || !Number.isFinite(at) || at < EARLIEST_UPLOAD_MS ? {} : { storedAt: at }
}

/**
 * A listing record as an object: the service's own fields dropped. A size that is not a whole
 * number of 0 or more counts as 0; an upload time that cannot be one is unknown (a prune never
 * deletes what it cannot date).
 */
function objectInfo (record: FileRecord): ObjectInfo {
  const size = Number.isSafeInteger(record.fileSizeInBytes) && record.fileSizeInBytes >= 0 ? record.fileSizeInBytes : 0
  return { cid: record.cid, size, name: record.fileName, ...uploadTime(record.createdAt) }
}

/** Statuses that are about the caller or the service, not the one upload: they end a batch. */
const NOT_THE_UPLOADS = new Set([401, 403, 407, 408, 429])
/** The most of a service's reason a refusal carries. */
const REASON_CHARS = 200

/**
 * Why the service refused to delete this one upload (a 4xx about it: production's answer for
 * an upload under a permanent plan), or undefined for any other failure.
 */
function refusalOf (err: unknown): string | undefined {
  if (!(err instanceof RemoteStatusError) || err.status < 400 || err.status >= 500 || NOT_THE_UPLOADS.has(err.status)) return undefined
  return boundedLine(`answered ${err.status}${err.excerpt === '' ? '' : `: ${err.excerpt}`}`, REASON_CHARS)
}

/** The store's options as the HTTP clients take them: progress as typed events. */
export function fetchOptions (options: GetOptions): FetchOptions {
  const { onProgress, ...rest } = options
  return onProgress === undefined ? rest : { ...rest, onProgress: (received, total) => { onProgress({ type: 'store:get:progress', detail: { received, total } }) } }
}

export function uploadOptions (options: PutOptions): UploadOptions {
  const { onProgress, ...rest } = options
  return onProgress === undefined ? rest : { ...rest, onProgress: (sent, total) => { onProgress({ type: 'store:put:progress', detail: { sent, total } }) } }
}

/**
 * The service over HTTP as an {@link ObjectStore}: puts through the upload endpoint (the CID
 * computed here, and the service's answer refused when it differs), reads through the gateways
 * in order (each answer hashed to the CID), lists and deletes through the uploads listing.
 * `stat` and `delete` walk the listing: a service has no lookup by CID for an account. A
 * `deleteMany` given what a caller's `list` read walks only the listing's head.
 */
export class ServiceObjectStore implements ObjectStore {
  readonly describe: string

  constructor (private readonly upload: UploadClient, private readonly gateway: GatewayClient, private readonly api: HttpClient, describe: string) {
    this.describe = describe
  }

  async put (path: string, profile: CidProfile, options: PutOptions = {}): Promise<{ cid: string, size: number }> {
    return await this.upload.add(path, profile, uploadOptions(options))
  }

  async getFile (cid: string, profile: CidProfile, destination: string, options: GetOptions = {}): Promise<GotObject> {
    const got = await this.gateway.fetchVerified(cid, profile, destination, fetchOptions(options))
    return { size: got.size, from: got.gateway }
  }

  async getInto (cid: string, profile: CidProfile, reader: (bytes: Readable) => Promise<void>, options: GetOptions = {}): Promise<GotObject> {
    const got = await this.gateway.fetchVerifiedInto(cid, profile, reader, fetchOptions(options))
    return { size: got.size, from: got.gateway }
  }

  async getBytes (cid: string, profile: CidProfile, options: GetBytesOptions = {}): Promise<Uint8Array[]> {
    const { hash, slab, ...rest } = options
    return await this.gateway.fetchVerifiedBytes(cid, profile, { ...fetchOptions(rest), hash, slab })
  }

  async blocks<T extends BlocksRequest> (objects: AsyncIterable<T>, sink: BlockSink, options: BlocksOptions<T> = {}): Promise<void> {
    for await (const object of objects) {
      const got = await this.gateway.fetchBlocks(object.cid, object.profile, sink, { signal: options.signal, maxBytes: object.maxBytes })
        .catch((err: unknown) => { throw options.failure?.(object, err) ?? err })
      options.onObject?.(object, got)
    }
  }

  async has (cid: string, options: StoreCallOptions = {}): Promise<boolean> {
    return await this.stat(cid, options) !== undefined
  }

  async stat (cid: string, options: StoreCallOptions = {}): Promise<ObjectInfo | undefined> {
    for await (const record of listFiles(this.api, { signal: options.signal })) {
      if (record.cid === cid) return objectInfo(record)
    }
    return undefined
  }

  async * list (options: ListOptions = {}): AsyncGenerator<ObjectInfo> {
    const seen = new Set<string>()
    for await (const record of listFiles(this.api, { signal: options.signal })) {
      options.onUpload?.(record.cid, { id: record.id, ...uploadTime(record.createdAt) })
      // An object uploaded twice is listed twice by the service; once here.
      if (seen.has(record.cid)) continue
      seen.add(record.cid)
      yield objectInfo(record)
    }
  }

  async delete (cid: string, options: StoreCallOptions = {}): Promise<boolean> {
    // One object asked for by name: a refusal is the caller's failure, thrown.
    return (await this.remove([cid], options, () => undefined)).removed.length > 0
  }

  async deleteMany (cids: readonly string[], options: DeleteOptions = {}): Promise<DeletedObjects> {
    return await this.remove(cids, options, refusalOf)
  }

  /** Deletes every upload of each CID; a failure `refusal` gives a reason for is answered, the rest thrown. */
  private async remove (cids: readonly string[], options: DeleteOptions, refusal: (err: unknown) => string | undefined): Promise<DeletedObjects> {
    const { storedBefore, seen } = options
    // Every upload of each: an object uploaded twice is listed, and deleted, twice. But not one made
    // since `storedBefore`: a device that stored it again after the caller listed it relies on it.
    const ids = new Map<string, string[]>()
    const stays = new Set<string>()
    const take = (cid: string, id: string, at: number | undefined): void => {
      if (storedBefore !== undefined && !(at !== undefined && at < storedBefore)) stays.add(cid)
      else ids.set(cid, [...(ids.get(cid) ?? []), id])
    }
    // What the caller's walk read is taken as read; the listing is read only for the uploads it could not know.
    const known = new Set<string>()
    const unnamed = new Set<string>()
    for (const cid of new Set(cids)) {
      const uploads = seen?.uploads.get(cid)
      if (uploads === undefined) { unnamed.add(cid); continue }
      for (const upload of uploads) { known.add(upload.id); take(cid, upload.id, upload.storedAt) }
    }
    // With every object named, only the head: an upload made since the walk is listed before what it read.
    const headOnly = unnamed.size === 0 && seen?.newestAt !== undefined
    const since = seen?.newestAt ?? 0
    for await (const record of listFiles(this.api, { signal: options.signal })) {
      const at = objectInfo(record).storedAt
      if (headOnly && at !== undefined && at < since) break
      // An upload the walk did not read: never deleted, and its object stays listed.
      if (seen?.uploads.has(record.cid) === true && !known.has(record.id)) stays.add(record.cid)
      else if (unnamed.has(record.cid)) take(record.cid, record.id, at)
    }
    const removed: string[] = []
    const refused: DeleteRefusal[] = []
    for (const [cid, uploads] of ids) {
      let any = false
      let reason: string | undefined
      for (const id of uploads) {
        try {
          any = await deleteUpload(this.api, id, options) || any
        } catch (err) {
          const why = refusal(err)
          if (why === undefined) throw err
          reason ??= why
        }
      }
      if (reason !== undefined) refused.push({ cid, reason })
      // Still held through a later upload: not removed.
      else if (any && !stays.has(cid)) removed.push(cid)
    }
    return { removed, refused }
  }

  async close (): Promise<void> {}
}
