import type { DealRegistry } from './deal-registry.js'
import type { NameRegistry } from './name-registry.js'
import type { ObjectStore, StoreCallOptions } from './object-store.js'

/** A publish's pointer as a registry keeps it: the latest snapshot CID for a namespace and network. */
export interface StoredPointer {
  readonly snapshotCid: string
  readonly engine: string
  readonly namespace: string
  readonly network: string
  readonly memories?: number
}

/**
 * Where the latest publish is named, beside the objects: the service's pointer service, or a
 * file in a directory store. `current` throws `PointerNotFoundError` when none is set. `put`
 * overwrites; once it answers, `current` gives what it set.
 */
export interface PointerRegistry {
  current: (namespace: string, network: string, options?: StoreCallOptions) => Promise<StoredPointer>
  put: (input: StoredPointer, options?: StoreCallOptions) => Promise<void>
}

/** What a read of publishes needs of a home: its objects and its pointer. A service has more (deals, names). */
export interface ObjectHome {
  readonly objects: ObjectStore
  readonly pointers: PointerRegistry
}

/** A home that also keeps names and deals beside its objects and pointer: a service. */
export interface ServiceHome extends ObjectHome {
  readonly names: NameRegistry
  readonly deals: DealRegistry
}

/** Whether a home keeps names and deals (a service) or only objects and a pointer (a directory). */
export function isServiceHome (home: ObjectHome): home is ServiceHome {
  const maybe = home as Partial<ServiceHome>
  return maybe.names !== undefined && maybe.deals !== undefined
}
