import { existsSync } from 'node:fs'
import { IndexDamagedError } from '../../errors.js'
import { openIndex, type Index } from '../../index/index.js'
import type { PastIndex } from '../read/index.js'
import type { Repository } from '../repository.js'
import { lookupInBatches, recordsFrom, type RecordFallback } from './newer-records.js'
import type { RecordLookup } from './targets.js'

/** The latest time a Date holds: the pointer's newest publish is at or before it. */
const NEWEST = new Date(8_640_000_000_000_000)

/** Where a `get` takes its content records from, and where it looks again for objects gone. */
export interface RecordSources {
  readonly records: RecordLookup
  readonly fallbacks: readonly RecordFallback[]
  /** Closes what was opened here (this device's index beside a past one). */
  close: () => void
}

export interface RecordSourcesInit {
  /** The past publish `index` is, when it is one: its CID. */
  readonly past?: string
  /** This device's index, read beside a past one: it holds the newest records this device made. */
  readonly local?: string
}

/**
 * The records a `get` or `restore --files` considers for each file, with its fallbacks
 * (docs/content-format.md, "Restore"). A past publish keeps records naming objects a repack
 * replaced since. So this device's index is read beside it, then the pointer's newest publish.
 */
export function recordSources (repository: Repository, index: Index, init: RecordSourcesInit = {}): RecordSources {
  const local = init.past === undefined || init.local === undefined ? undefined : openLocal(init.local)
  const records = recordsFrom(local === undefined ? [index] : [index, local])
  // The rest of the same records first: one naming other objects, newest first.
  const same: RecordFallback = async (cids) => lookupInBatches(records, cids)
  const head: RecordFallback = async (cids) => {
    let newest: PastIndex
    try {
      // Built once into past/ and kept; the repository closes it.
      newest = await repository.pastIndex(NEWEST)
    } catch {
      // A head that cannot be read gives nothing: the files keep the failure they had.
      return new Map()
    }
    if (newest.cid === init.past) return new Map()
    return lookupInBatches((asked) => newest.index.content.lookupMany(asked), cids)
  }
  return { records, fallbacks: [same, head], close: () => { local?.close() } }
}

/** This device's index read-only; a missing or damaged one adds nothing (the publish's records still serve). */
function openLocal (path: string): Index | undefined {
  if (!existsSync(path)) return undefined
  try {
    return openIndex(path, { readonly: true })
  } catch (err) {
    if (err instanceof IndexDamagedError) return undefined
    throw err
  }
}
