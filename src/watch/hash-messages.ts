import type { CidProfileName, FileSegment, StatTuple } from '../content/index.js'

/** One file to hash, or one segment of a large file (then `size` is the file size it was planned for). */
export interface HashJob {
  readonly id: number
  readonly path: string
  readonly profile: CidProfileName
  readonly segment?: FileSegment & { readonly size: number }
}

/** What a worker answers for one job. */
export type HashOutcome =
  | { readonly id: number, readonly ok: true, readonly cid: string, readonly size: number, readonly mtimeMs: number, readonly stat: StatTuple }
  | { readonly id: number, readonly ok: true, readonly digests: Uint8Array, readonly mtimeMs: number, readonly stat: StatTuple }
  | { readonly id: number, readonly ok: false, readonly code: string, readonly message: string }
