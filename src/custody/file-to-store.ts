import type { CID } from 'multiformats/cid'
import type { CidProfile } from '../content/index.js'

/** A file of the index to store: where it is and what its row says it holds. */
export interface FileToStore {
  /** Absolute path on this device. */
  readonly path: string
  readonly cid: CID
  readonly size: number
  /** The profile its CID was computed with (the folder's). */
  readonly profile: CidProfile
}
