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
export interface HashJob {
  readonly type: 'hash'
  readonly id: number
  readonly slabs: readonly Uint8Array[]
  /** Answer the object's blocks too: a service in the same process then stores it without hashing again. */
  readonly blocks?: boolean
  /** More bytes follow in `hash-piece` messages; `hash-end` asks for the answer. */
  readonly open?: boolean
}

/**
 * A file brought back: its blob's slices (`piece`, in order) opened and hashed under `profile`, the
 * plaintext written to the temp file `path`, which the thread creates and, once its plaintext
 * hashed to `cid`, gives `mode` and holds open until a `sync` names it (fsynced and closed there);
 * it removes the file when the job fails, does not verify, or is given up. With `path` null the
 * plaintext is hashed and let go: nothing is written or held (a drill's check, `verify --content`).
 */
export interface UnsealJob {
  readonly type: 'unseal'
  readonly id: number
  readonly path: string | null
  readonly key: Uint8Array
  readonly cid: string
  /** The same CID as bytes, which every chunk is bound to: the thread need not parse the text. */
  readonly cidBytes: Uint8Array
  readonly size: number
  readonly profile: CidProfileName
  /** The file's mtime to set once it is written (ms since the epoch). */
  readonly mtimeMs: number
  /** The file's mode once verified (0600 until then). */
  readonly mode: number
  /** Its owner and group once verified (as root), set before its mode. */
  readonly uid?: number
  readonly gid?: number
  /**
   * Where the temp's directory really is (its realpath) when it was checked: the thread compares
   * it right after the temp is made, before a byte is written, and refuses a directory swapped since.
   */
  readonly dir?: string
  /**
   * The whole blob, given at once (a small file of a pack in memory): opened and ended in this
   * one message, answered by `unsealed` alone, with no `piece` or `end` to follow.
   */
  readonly whole?: readonly Uint8Array[]
}

export type ToSealer =
  | SmallJob
  | LargeJob
  | HashJob
  | UnsealJob
  /** The next slice of an unseal job's blob: a view of an object in memory (shared, not copied). */
  | { readonly type: 'piece', readonly id: number, readonly bytes: Uint8Array }
  /** An unseal job's blob is whole: check its length, answer the CID; a verified file is held open for a `sync`. */
  | { readonly type: 'end', readonly id: number }
  /** Unseal jobs of whole blobs (the files of one pack), opened one after another; their answers come in one `many`. */
  | { readonly type: 'unseal-many', readonly jobs: readonly UnsealJob[] }
  /** fsyncs and closes the files of these ended unseal jobs, all at once (journal commits shared); answered `synced` under `id`. */
  | { readonly type: 'sync', readonly id: number, readonly jobs: readonly number[] }
  /** A part was sent (or dropped): the thread may seal one more ahead. */
  | { readonly type: 'ack', readonly id: number }
  /** The next bytes of an open hash job (a view of shared memory, not copied), hashed at once. */
  | { readonly type: 'hash-piece', readonly id: number, readonly bytes: Uint8Array }
  /** An open hash job's bytes are all in: answered `hashed`. */
  | { readonly type: 'hash-end', readonly id: number }
  | { readonly type: 'cancel', readonly id: number }

export type FromSealer =
  | { readonly type: 'blob', readonly id: number, readonly blob: ArrayBuffer }
  /**
   * Part `index` is whole: `path` is its file (null when an earlier run's object holds these very
   * bytes), `blocks` the object's blocks as they were hashed to `object` as it was written.
   */
  | { readonly type: 'part', readonly id: number, readonly index: number, readonly path: string | null, readonly object: string, readonly bytes: number, readonly blocks: ObjectBlocks }
  | { readonly type: 'done', readonly id: number }
  | { readonly type: 'hashed', readonly id: number, readonly cid: string, readonly blocks?: ObjectBlocks }
  /** A piece was opened and written: `plainBytes` of the file. */
  | { readonly type: 'opened', readonly id: number, readonly plainBytes: number }
  /** An unseal job's file is written; `cid` is what its plaintext hashes to (not its row's: the file is already removed). */
  | { readonly type: 'unsealed', readonly id: number, readonly cid: string, readonly inode: number, readonly plainBytes?: number }
  /** The files of a `sync` are durable and closed, but `failed` (each removed). */
  | { readonly type: 'synced', readonly id: number, readonly failed: ReadonlyArray<{ readonly job: number, readonly code: string | undefined, readonly message: string }> }
  /** A cancelled job is forgotten (an unseal job's file closed and removed). */
  | { readonly type: 'dropped', readonly id: number }
  /** `changed`: the bytes read are not the row's (FileChangedWhileHashingError); else a read or write failed with `code` (ERR_CONTENT_INTEGRITY: a blob that does not open). */
  | FailedAnswer
  /** The answers of an `unseal-many`, each `unsealed` or `failed`, in its jobs' order. */
  | { readonly type: 'many', readonly answers: ReadonlyArray<UnsealedAnswer | FailedAnswer> }

type UnsealedAnswer = Extract<FromSealer, { type: 'unsealed' }>
type FailedAnswer = { readonly type: 'failed', readonly id: number, readonly changed: boolean, readonly code: string | undefined, readonly message: string }
