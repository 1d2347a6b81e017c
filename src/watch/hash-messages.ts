import type { CidProfileName } from '../content/index.js'

/** One file to hash, as sent to a worker. */
export interface HashJob {
  readonly id: number
  readonly path: string
  readonly profile: CidProfileName
}

/** What a worker answers for one job. */
export type HashOutcome =
  | { readonly id: number, readonly ok: true, readonly cid: string, readonly size: number, readonly mtimeMs: number }
  | { readonly id: number, readonly ok: false, readonly code: string, readonly message: string }
