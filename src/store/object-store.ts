import type { Readable } from 'node:stream'
import type { CID } from 'multiformats/cid'
import type { CidProfile, ObjectBlocks } from '../content/index.js'
import type { ProgressEvent, ProgressOptions } from '../util/progress.js'
import type { ByteRange } from './stored-range.js'

/** What a store tells a caller while it works: the same events from every store. */
export type StoreProgressEvent =
  | ProgressEvent<'store:put:progress', { readonly sent: number, readonly total: number }>
  | ProgressEvent<'store:get:progress', { readonly received: number, readonly total: number | undefined }>

export interface StoreCallOptions extends ProgressOptions<StoreProgressEvent> {}

export interface DeleteOptions extends StoreCallOptions {
  /**
   * Only what was stored before this time (ms) goes. An upload made since stays: another device
   * stored the object again, and its publish may name it. One whose time the store does not say stays too.
   */
  readonly storedBefore?: number
  /**
   * What the caller's own walk of `list` read of these objects' uploads (see {@link UploadsSeen}).
   * A store that deletes uploads by id deletes only those named here, instead of walking its listing.
   */
  readonly seen?: UploadsSeen
}

/** One upload a store's listing holds: an object uploaded twice is listed twice, under two ids. */
export interface StoredUpload {
  readonly id: string
  /** When it was uploaded (ms, the store's clock), where the store says. */
  readonly storedAt?: number
}

/** Options of a walk of `list`. */
export interface ListOptions extends StoreCallOptions {
  /**
   * Told of each upload the walk reads, an object's repeats included, in the listing's order. Only
   * a store whose listing holds uploads by id tells it; the others never call it.
   */
  readonly onUpload?: (cid: string, upload: StoredUpload) => void
}

/**
 * A caller's walk of `list`, handed to `deleteMany` so the store need not walk its listing again.
 * Only uploads named here are deleted. An upload made since the walk is never deleted, and keeps its
 * object listed: the store reads the listing's head down to `newestAt` to find such uploads.
 */
export interface UploadsSeen {
  /** Every upload of each object the walk read (as `onUpload` told them). An object not named here is looked up by the store. */
  readonly uploads: ReadonlyMap<string, readonly StoredUpload[]>
  /** The newest upload time the walk read. Unknown: the store reads its whole listing for uploads since. */
  readonly newestAt: number | undefined
}

/** What {@link ObjectStore.stream} takes. */
export interface StreamOptions extends SealedRead {
  readonly signal?: AbortSignal
  /** Bytes past this many are refused (not that object). */
  readonly maxBytes: number
  /** Each chunk is lent only until the next is asked for (see {@link ObjectStore.stream}). */
  readonly lend?: boolean
  /**
   * Only these bytes of the object: the blocks that hold them are read and checked, each against
   * the CID its checked parent names; the others are not read at all.
   */
  readonly range?: ByteRange
}

/**
 * A read whose caller checks every byte itself: a sealed blob, whose chunks each carry an AES-GCM
 * tag over the file's CID, and whose plaintext is then hashed to that CID. A store reading its own
 * disk may skip hashing the raw leaves then; the nodes above them are still checked, since they
 * steer the walk. A store reading from elsewhere checks every block as before.
 */
export interface SealedRead {
  /** The bytes are a sealed blob (or a pack of them), checked by the caller as they are opened. */
  readonly sealed?: boolean
}

export interface PutOptions extends StoreCallOptions {
  /** `false`: one attempt only (a caller that checks for a lost answer before sending again). */
  readonly retry?: false
  /** Awaited before each read of the file goes out: a rate limit holds the bytes back here. */
  readonly throttle?: (bytes: number, signal?: AbortSignal) => Promise<void>
  /** The CID the bytes were hashed to as they were written: the store's answer must equal it. */
  readonly expectedCid?: string
  /** The name a listing shows; the file's own name when not given. */
  readonly name?: string
  /** The object's blocks as hashed with `expectedCid`: a store may keep them without hashing again. */
  readonly blocks?: ObjectBlocks
}

export interface GetOptions extends StoreCallOptions {
  /** The size the caller knows the bytes have (or the most it accepts). */
  readonly maxBytes?: number
  /** One source's whole answer, instead of the store's default deadline. */
  readonly deadlineMs?: number
  /**
   * The bytes' own bound, read from their first `prefixBytes`: it throws for bytes that are no
   * such object, and lowers `maxBytes` otherwise. Junk stops after its prefix.
   */
  readonly boundBy?: { readonly prefixBytes: number, readonly bound: (prefix: Buffer) => number | undefined }
  /** fsync the file and its directory before answering (default true); false for scratch. */
  readonly durable?: boolean
}

/** An object's bytes hashed as they come, each slab once it is full ({@link GetBytesOptions.hashing}). */
export interface SlabHashing {
  /** The next slab, full (the last one cut): left as it is until `finish` answers. */
  update: (slab: Uint8Array) => void
  finish: () => Promise<string>
}

export interface GetBytesOptions extends GetOptions, SealedRead {
  /** Hashes the bytes in order (in another thread, say); the store compares the answer with the CID. */
  readonly hash?: (slabs: readonly Uint8Array[]) => Promise<string>
  /**
   * Preferred to `hash` by a store that reads the slabs itself: each is hashed (in another
   * thread, say) while the next is read. The store compares the answer with the CID.
   */
  readonly hashing?: () => SlabHashing
  /** Gives the next slab to fill; every slab the same size. */
  readonly slab?: () => Uint8Array
}

/** An object the store holds and would not remove, with the store's reason (made safe to show, bounded). */
export interface DeleteRefusal { readonly cid: string, readonly reason: string }

/** What a `deleteMany` did: each CID asked for is in at most one of the two. */
export interface DeletedObjects {
  /** The objects it removed: `stat` and `list` no longer show them. */
  readonly removed: readonly string[]
  /** The objects the store holds and refused to remove: they stay. */
  readonly refused: readonly DeleteRefusal[]
}

/** Where verified bytes came from, for messages. */
export interface GotObject { readonly size: number, readonly from: string }

/** What a store holds of one object. */
export interface ObjectInfo {
  readonly cid: string
  readonly size: number
  /** The name it was put under; '' when the store keeps none. */
  readonly name: string
  /** When it was put (ms since the epoch), where the store knows. */
  readonly storedAt?: number
}

/** A block as a UnixFS object is made of, handed to an export. */
export type BlockSink = (cid: CID, bytes: Uint8Array) => Promise<void>

/** One object whose blocks an export wants. */
export interface BlocksRequest {
  readonly cid: string
  readonly profile: CidProfile
  /** The most its bytes may weigh. */
  readonly maxBytes?: number
}

export interface BlocksOptions<T extends BlocksRequest> {
  readonly signal?: AbortSignal
  /** Told once each object's blocks were all handed over. */
  readonly onObject?: (object: T, walked: { readonly size: number, readonly blocks: number }) => void
  /** The error to throw for an object that failed (named for the caller's messages). */
  readonly failure?: (object: T, err: unknown) => unknown
}

/**
 * Where cidsync keeps objects: the service over HTTP, the embedded service in this process, or a
 * plain directory. An object is a file's bytes as one UnixFS DAG under a {@link CidProfile}; its
 * CID is the root of that DAG. Every implementation runs the same conformance suite
 * (test/store/conformance.ts).
 *
 * Guarantees every implementation gives:
 * - **Verified reads.** No read hands over bytes that do not hash to the CID under the profile.
 *   `getFile` renames into place only verified bytes; `getInto` and `getBytes` answer only once
 *   verified; `stream` checks each block before any of it comes out.
 * - **Private files.** `getFile` writes its temp and its file 0600: an object may be a user's
 *   file in plain, or sealed bytes of one.
 * - **Atomic put.** An object is stored whole or not at all. A put that fails or is killed
 *   leaves nothing that `list`, `stat` or a read would take for the object. A put refused
 *   because its bytes are not `expectedCid` leaves no object under that CID (a service may
 *   keep the bytes under the CID it computed).
 * - **Read-after-write.** Once `put` answers, `stat`, `list` and every read find the object.
 * - **Idempotent put.** Putting the same bytes again answers the same CID and stores one object
 *   (a service may list a second upload of it).
 * - **Delete.** Once `delete` answers, `stat` and `list` no longer show the object. A service
 *   may still serve its bytes until it reclaims space; a directory removes them at once.
 *   `deleteMany` answers exactly which it removed. A refusal of one object (a service that keeps
 *   uploads under a permanent plan) is answered and the rest go on; `delete` throws it. A failure
 *   of the store itself (credentials, a rate limit, a server error, the network) throws.
 * - **List.** Every object once, newest first where the store knows the order. A listing cut
 *   short is an error, never a shorter answer.
 * - **Errors.** A missing object is `ContentNotFoundError`; bytes that are not the CID's are
 *   `IntegrityError`; an abort ends a call at once with the abort's error.
 */
export interface ObjectStore {
  /** Where the objects are, for messages. */
  readonly describe: string
  /** Stores the file at `path` as one object under `profile`; answers its CID and size. */
  put: (path: string, profile: CidProfile, options?: PutOptions) => Promise<{ cid: string, size: number }>
  /** The object's bytes into `destination`, verified first (a temp file beside it, renamed). */
  getFile: (cid: string, profile: CidProfile, destination: string, options?: GetOptions) => Promise<GotObject>
  /**
   * The object's bytes handed to `reader` as they arrive, before they are verified: the reader
   * relies on nothing it made until this answers. A reader's own failure fails the read.
   */
  getInto: (cid: string, profile: CidProfile, reader: (bytes: Readable) => Promise<void>, options?: GetOptions) => Promise<GotObject>
  /** The object's bytes in memory, in slabs of equal size, answered once verified. */
  getBytes: (cid: string, profile: CidProfile, options?: GetBytesOptions) => Promise<Uint8Array[]>
  /**
   * The object's bytes, each block checked against its CID before any of it comes out. Only
   * where the store holds blocks it can check one by one; elsewhere it is undefined. `lend`: each
   * chunk is valid only until the caller asks for the next (its memory is read into again), for a
   * caller that copies or sends what it keeps.
   */
  readonly stream?: (cid: string, options: StreamOptions) => AsyncGenerator<Uint8Array>
  /** Each object's UnixFS blocks, in order, each checked, handed to `sink`; objects in turn. */
  blocks: <T extends BlocksRequest>(objects: AsyncIterable<T>, sink: BlockSink, options?: BlocksOptions<T>) => Promise<void>
  /** Whether the store holds the object (as `stat` would find it). */
  has: (cid: string, options?: StoreCallOptions) => Promise<boolean>
  /** What the store holds of the object, or undefined. */
  stat: (cid: string, options?: StoreCallOptions) => Promise<ObjectInfo | undefined>
  /** Every object the store holds. */
  list: (options?: ListOptions) => AsyncGenerator<ObjectInfo>
  /** Removes the object; answers false when the store did not hold it. */
  delete: (cid: string, options?: StoreCallOptions) => Promise<boolean>
  /**
   * Removes each object of `cids` the store holds, as `delete` does; answers those it removed and
   * those it refused to. Neither holds one it did not hold, nor one stored again since `storedBefore`.
   * A service walks its listing once for the whole batch, where `delete` walks it for each; with
   * `seen` it reads only the listing's head. With `storedBefore`, only uploads older than it go;
   * an object stored again since stays.
   */
  deleteMany: (cids: readonly string[], options?: DeleteOptions) => Promise<DeletedObjects>
  close: () => Promise<void>
}

/** A `(sent, total)` callback as a store's progress handler (put events only). */
export function sentProgress (report: ((sent: number, total: number) => void) | undefined): StoreCallOptions['onProgress'] {
  return report === undefined ? undefined : (event) => { if (event.type === 'store:put:progress') report(event.detail.sent, event.detail.total) }
}
