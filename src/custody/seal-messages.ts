import type { CidProfileName, ObjectBlocks } from '../content/index.js'

// Messages between the sealing threads (seal-worker.ts) and their pool (seal-pool.ts).

interface JobCommon {
  readonly id: number
  readonly path: string
  /** The file key. */
  readonly key: Uint8Array
  /** The row's CID: bound into every chunk, and what the bytes read must hash to. */
  readonly cid: string
  readonly size: number
  readonly profile: CidProfileName
}

/** A small file sealed whole into one blob, answered to be packed. */
export interface SmallJob extends JobCommon { readonly type: 'small' }

/** A large file sealed into part files under `spoolDir`, each answered as it is whole. */
export interface LargeJob extends JobCommon {
  readonly type: 'large'
  readonly spoolDir: string
  readonly partChunks: number
  /** Parts an earlier run stored, by index: not written again when these bytes make that object. */
  readonly storedParts: ReadonlyArray<readonly [number, string]>
}

/** An object's bytes hashed to its CID under the snapshots' profile (a restore's check of what a gateway sent). */
export interface HashJob { readonly type: 'hash', readonly id: number, readonly slabs: readonly Uint8Array[] }

/**
 * A file brought back: its blob's slices (`piece`, in order) opened and hashed under `profile`, the
 * plaintext written to the temp file `path`, which the thread creates, fsyncs and closes (and
 * removes, when the job fails or is given up).
 */
export interface UnsealJob {
  readonly type: 'unseal'
  readonly id: number
  readonly path: string
  readonly key: Uint8Array
  readonly cid: string
  readonly size: number
  readonly profile: CidProfileName
  /** The file's mtime to set once it is written (ms since the epoch). */
  readonly mtimeMs: number
}

export type ToSealer =
  | SmallJob
  | LargeJob
  | HashJob
  | UnsealJob
  /** The next slice of an unseal job's blob: a view of an object in memory (shared, not copied). */
  | { readonly type: 'piece', readonly id: number, readonly bytes: Uint8Array }
  /** An unseal job's blob is whole: check its length, fsync and close the file, answer the CID. */
  | { readonly type: 'end', readonly id: number }
  /** A part was sent (or dropped): the thread may seal one more ahead. */
  | { readonly type: 'ack', readonly id: number }
  | { readonly type: 'cancel', readonly id: number }

export type FromSealer =
  | { readonly type: 'blob', readonly id: number, readonly blob: ArrayBuffer }
  /**
   * Part `index` is whole: `path` is its file (null when an earlier run's object holds these very
   * bytes), `blocks` the object's blocks as they were hashed to `object` as it was written.
   */
  | { readonly type: 'part', readonly id: number, readonly index: number, readonly path: string | null, readonly object: string, readonly bytes: number, readonly blocks: ObjectBlocks }
  | { readonly type: 'done', readonly id: number }
  | { readonly type: 'hashed', readonly id: number, readonly cid: string }
  /** A piece was opened and written: `plainBytes` of the file. */
  | { readonly type: 'opened', readonly id: number, readonly plainBytes: number }
  /** An unseal job's file is written, fsynced and closed; `cid` is what its plaintext hashes to. */
  | { readonly type: 'unsealed', readonly id: number, readonly cid: string, readonly inode: number }
  /** A cancelled job is forgotten (an unseal job's file closed and removed). */
  | { readonly type: 'dropped', readonly id: number }
  /** `changed`: the bytes read are not the row's (FileChangedWhileHashingError); else a read or write failed with `code` (ERR_CONTENT_INTEGRITY: a blob that does not open). */
  | { readonly type: 'failed', readonly id: number, readonly changed: boolean, readonly code: string | undefined, readonly message: string }
