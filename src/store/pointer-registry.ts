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
 * file in a directory store. Every implementation runs the same conformance suite
 * (test/store/pointer-conformance.ts).
 *
 * Guarantees every implementation gives:
 * - **Nothing set.** `current` of a namespace and network never put throws `PointerNotFoundError`.
 * - **Read-after-write.** Once `put` answers, `current` gives what it set.
 * - **Apart.** Each namespace and network is its own pointer: a put to one never changes another.
 * - **Checked.** A pointer whose snapshot CID is not a CID is refused, and nothing is written.
 * - **Atomic put.** `current` gives one whole pointer that was put, never parts of two.
 * - **Concurrent puts.** Of puts to one pointer at once, one wins whole; which is not promised.
 *   There is no compare-and-swap: a caller that must never move a pointer back checks first
 *   (sync/mirrors/pointer.ts). Puts to different pointers at once, through one registry, all land.
 * - **One writer.** Across processes, a store assumes one writer a pointer: the device that owns it.
 * - **Errors.** A home missing or unreachable is its backend's own error (store/backends.ts), never
 *   `PointerNotFoundError`: an unmounted disk's pointer is not "nothing".
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
