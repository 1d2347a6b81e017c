import { PointerRolledBackError } from '../../errors.js'
import type { HistoryEntry } from './history.js'
import type { LastPublished } from '../state/index.js'

/**
 * Refuses a past publish chosen for `at` when the pointer's history lacks this device's own last
 * publish (made at or before `at`): walking newest first, the walk stops at the first publish at
 * or before `at`, so one older than ours means ours is not in the chain. The service set the
 * pointer back (a lying or restored service serving an older pointer), or a device published over
 * it without merging; either way an older state would pass for the one at that time.
 * `restore --at`, `get --at`, `find --at` and `export` (at the pointer too: `at` is then now) check
 * the same way, before fetching anything of it.
 */
export function checkOwnPublishIn (found: Pick<HistoryEntry, 'cid' | 'at' | 'publishedAs'> | undefined, own: LastPublished | undefined, at: Date): void {
  if (own === undefined) return
  const ownAt = own.at === null ? NaN : Date.parse(own.at)
  if (!(ownAt <= at.getTime())) return
  // A forget links kept publishes anew: the device's own last one is then known by the CID it had.
  if (found !== undefined && (found.cid === own.cid || found.publishedAs === own.cid || Date.parse(found.at) >= ownAt)) return
  throw new PointerRolledBackError(`the pointer's history lacks this device's own publish ${own.cid} of ${own.at ?? '?'}: the service set the pointer back, or a device published over it without merging. ` +
    'Nothing was fetched from it: an older state would pass for the one at that time. Let the daemon publish again (or run `cidsync snapshot`), then retry')
}
