import { cachedHistory } from '../read/index.js'
import type { SyncStore } from '../state/index.js'

/** Publishes looked back through from this device's last known pointer. */
const LOOKBACK = 10_000

/** Where a mirror's publish stands against the newest publish this device knows of. */
export interface MirrorBehind {
  /** This device's last known pointer (what the primary's held when last looked at, by a reconciliation, a publish or a plain restore; else its own last publish), with its publish time when its manifest was read; null on a device that knows none. */
  readonly known: { readonly cid: string, readonly at: string | null } | null
  /**
   * Publishes the mirror's is behind it: 0 the same; null when it is not among the history this
   * device has read (a newer publish of another device, another line, or no pointer known).
   */
  readonly behind: number | null
}

/**
 * Whether `mirrorCid` (what a mirror's pointer holds) is older than the newest publish this device
 * knows, and by how many publishes, from what it has read before (nothing is fetched): a restore
 * from a lagging mirror installs an older index, which must not pass for the latest.
 */
export function mirrorBehind (store: SyncStore, mirrorCid: string): MirrorBehind {
  const pointer = store.remotePointer()
  const cid = pointer !== undefined && pointer.cid !== '' ? pointer.cid : store.lastPublished()?.cid
  if (cid === undefined) return { known: null, behind: null }
  const history = cachedHistory(store.manifestCache, cid, LOOKBACK)
  const known = { cid, at: history[0]?.at ?? null }
  const at = history.findIndex(e => e.cid === mirrorCid)
  // Each publish read names the one before it: one step past what was read is known to be older too.
  const next = history.findIndex(e => e.previous === mirrorCid)
  return { known, behind: cid === mirrorCid ? 0 : at >= 0 ? at : next >= 0 ? next + 1 : null }
}
