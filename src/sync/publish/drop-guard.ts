import type { Config } from '../../config/index.js'
import { PublishHeldError } from '../../errors.js'
import type { Index } from '../../index/index.js'
import type { SyncStore } from '../state/index.js'

/** This device's live entries now (kept in `live_counts` as rows change, not counted). */
export function ownEntries (index: Index, deviceId: string): number {
  return index.entries.liveCount(deviceId)
}

/**
 * Holds a publish that would drop more of this device's entries than the config allows at once
 * (more than `max_drop_entries` and more than `max_drop_fraction` of what it last published): a
 * folder emptied by mistake, an unmounted disk or a lost index must not overwrite the only copy
 * others restore from. `confirmed` lets it through.
 */
export function checkDrop (index: Index, deviceId: string, config: Config, store: SyncStore, confirmed: boolean): void {
  const last = store.lastPublished()?.ownEntries ?? null
  if (last === null || confirmed) return
  const now = ownEntries(index, deviceId)
  const dropping = last - now
  if (dropping <= config.snapshot.maxDropEntries || dropping <= last * config.snapshot.maxDropFraction) return
  throw new PublishHeldError(`publishing is held: it would drop ${dropping} of the ${last} entries this device last published (${now} left). ` +
    'If a folder is unmounted or was emptied by mistake, bring it back and the hold lifts by itself; if the files are really gone, confirm with `cidsync snapshot --confirm-drop`', dropping, last)
}
