import type { StoreCallOptions } from './object-store.js'

/** A storage deal as a registry tells it; any field the service left out is undefined. */
export interface DealInfo {
  readonly dealId: number | undefined
  readonly provider: string | undefined
  readonly status: string | undefined
}

/**
 * Storage deals for objects (the service's Filecoin deals). A home without deals (a directory)
 * has none. `addCid` asks for one; a deal takes up to days, so `dealStatus` is empty until then.
 * A deal made runs to its end: nothing here cancels one.
 */
export interface DealRegistry {
  addCid: (cid: string, options?: StoreCallOptions) => Promise<void>
  dealStatus: (cid: string, options?: StoreCallOptions) => Promise<readonly DealInfo[]>
}
