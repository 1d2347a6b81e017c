import { parseContentRecord } from '../custody/index.js'
import type { Index } from '../index/index.js'

/**
 * Where a file's content stands (docs/content-format.md): the one answer `cidsync ls`, `find`,
 * `where`, `log` and the dashboard all show.
 *
 * - `local-only`: nothing stored, and its folder does not store content, or the file is left out
 *   (`[content] exclude`, `max_file_size`: `why` says which), or it is another device's, not stored by it
 * - `queued`: its folder stores content; it waits for the next pass
 * - `uploading`: the pass running now is storing it
 * - `failed`: its last attempt failed (`why` says why); it is tried again with back-off
 * - `stored`: a content record holds it under a key this device can open
 * - `sent-for-deal`: stored, and a storage deal was asked for (some object of it has none yet)
 * - `deal-active`: stored, and every object of it is in a deal
 */
export type StoredState = 'local-only' | 'queued' | 'uploading' | 'stored' | 'sent-for-deal' | 'deal-active' | 'failed'

export const STORED_STATES: readonly StoredState[] = ['local-only', 'queued', 'uploading', 'stored', 'sent-for-deal', 'deal-active', 'failed']

/** A failed attempt at a file's content, as the daemon keeps it (and leaves in the state dir). */
export interface ContentFailureNote { readonly folder: string, readonly path: string, readonly code: string, readonly message: string, readonly since: string, readonly advice?: string }

/**
 * What this device is doing with content, beyond what the index says: which folders store, which
 * files the running pass is storing, which failed. From the daemon's status where it runs, else
 * from the state dir (nothing uploads then). Absent: the index alone answers.
 */
export interface ContentActivity {
  /** This device: `queued`, `uploading` and `failed` are about its own rows only. */
  readonly deviceId: string | undefined
  /** Folders with `store = true`. */
  readonly storing: ReadonlySet<string>
  /** `folder/path` of files the running pass is storing. */
  readonly uploading: ReadonlySet<string>
  /** Failures by `folder/path`. */
  readonly failed: ReadonlyMap<string, ContentFailureNote>
  /** The key this device stores under ("" plain); records under another key it cannot open are not its. */
  readonly keyId?: string
  /** Why a file of a storing folder is never stored (`[content] exclude`, `max_file_size`), if it is not. */
  readonly notStored?: (folder: string, path: string, size: number) => string | undefined
}

/** A row whose content is asked about: whose it is and where it lies. */
export interface StateOfFile { readonly deviceId: string, readonly folder: string, readonly path: string, readonly size?: number }

export interface ContentState {
  readonly state: StoredState
  /** For `failed`: what failed (code and message); for a file left out, why. */
  readonly why?: string
}

type DealStanding = 'deal-active' | 'sent-for-deal' | 'stored'

/** How the objects of stored content stand with deals: all made, some asked for, or none asked. */
function dealStanding (index: Index, objects: ReadonlyArray<readonly [string, number, number]>): DealStanding {
  let made = 0
  let asked = 0
  for (const [object] of objects) {
    const deal = index.remote.dealState(object)
    if (deal === 'made') made++
    else if (deal !== 'none' || index.remote.stateOf(object) === 'sent-for-deal') asked++
  }
  return made === objects.length ? 'deal-active' : made + asked > 0 ? 'sent-for-deal' : 'stored'
}

/**
 * Where a CID's content stands (see {@link StoredState}), for a row `file` when given: a content
 * record (parsed; a forged one is not counted) from any device makes it stored, with its deals;
 * else this device's activity says queued, uploading or failed; else local-only.
 */
export function contentState (index: Index, cid: string | null, file?: StateOfFile, activity?: ContentActivity): ContentState {
  if (cid === null) return { state: 'local-only' }
  let best: DealStanding | undefined
  for (const row of index.content.lookup(cid)) {
    if (activity?.keyId !== undefined && row.keyId !== '' && row.keyId !== activity.keyId) continue
    const objects = recordObjects(row)
    if (objects === undefined) continue
    const standing = dealStanding(index, objects)
    if (best === undefined || RANK[standing] > RANK[best]) best = standing
  }
  if (best !== undefined) return { state: best }
  if (file === undefined || activity === undefined || file.deviceId !== activity.deviceId) return { state: 'local-only' }
  const key = `${file.folder}/${file.path}`
  const failure = activity.failed.get(key)
  if (failure !== undefined) return { state: 'failed', why: `${failure.message} [${failure.code}]` }
  if (activity.uploading.has(key)) return { state: 'uploading' }
  if (!activity.storing.has(file.folder)) return { state: 'local-only' }
  const never = activity.notStored?.(file.folder, file.path, file.size ?? 0)
  return never === undefined ? { state: 'queued' } : { state: 'local-only', why: never }
}

/** A content record row as the index holds it. */
export type RecordRow = ReturnType<Index['content']['lookup']>[number]

/** A record row's objects, parsed as a reader checks them; undefined for a forged or damaged one (not counted). */
export function recordObjects (row: RecordRow): ReadonlyArray<readonly [string, number, number]> | undefined {
  try {
    return parseContentRecord({ cid: row.cid, size: row.size, sealing: row.sealing, keyId: row.keyId, keySalt: row.keySalt, objects: JSON.parse(row.objects) as unknown }).objects
  } catch {
    return undefined
  }
}

const RANK: Record<DealStanding, number> = { stored: 0, 'sent-for-deal': 1, 'deal-active': 2 }

/** {@link contentState}'s state alone. */
export function storedState (index: Index, cid: string | null, file?: StateOfFile, activity?: ContentActivity): StoredState {
  return contentState(index, cid, file, activity).state
}

/** Whether a version in that state can be fetched back (`cidsync get`): its content is stored. */
export function fetchable (state: StoredState): boolean {
  return state === 'stored' || state === 'sent-for-deal' || state === 'deal-active'
}
