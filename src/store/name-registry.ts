import type { StoreCallOptions } from './object-store.js'

/** A name a registry made: its key's handle and the IPNS name others resolve. */
export interface NameKey {
  readonly ipnsName: string
  readonly ipnsId: string
}

/** A name as the registry lists it: the CID it names now, '' when none or not a CID. */
export interface NameEntry extends NameKey {
  readonly cid: string
  /** When it was last bound, in ms since the epoch, when the registry says. */
  readonly lastUpdate?: number
}

/**
 * Names that follow the latest publish for readers without cidsync (IPNS on the service). A home
 * without names (a directory) has none. `publish` binds the key to the CID; once it answers,
 * `list` shows the CID. A key the registry lacks is a `NameNotFoundError`.
 */
export interface NameRegistry {
  create: (options?: StoreCallOptions) => Promise<NameKey>
  publish: (keyName: string, cid: string, options?: StoreCallOptions) => Promise<{ readonly ipnsId: string, readonly value: string }>
  list: (options?: StoreCallOptions) => Promise<readonly NameEntry[]>
}
