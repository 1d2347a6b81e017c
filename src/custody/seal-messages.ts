import type { CidProfileName } from '../content/index.js'

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

export type ToSealer =
  | SmallJob
  | LargeJob
  /** A part was sent (or dropped): the thread may seal one more ahead. */
  | { readonly type: 'ack', readonly id: number }
  | { readonly type: 'cancel', readonly id: number }

export type FromSealer =
  | { readonly type: 'blob', readonly id: number, readonly blob: ArrayBuffer }
  /** Part `index` is whole: `path` is its file (null when an earlier run's object holds these very bytes). */
  | { readonly type: 'part', readonly id: number, readonly index: number, readonly path: string | null, readonly object: string, readonly bytes: number }
  | { readonly type: 'done', readonly id: number }
  /** `changed`: the bytes read are not the row's (FileChangedWhileHashingError); else a read failed with `code`. */
  | { readonly type: 'failed', readonly id: number, readonly changed: boolean, readonly code: string | undefined, readonly message: string }
