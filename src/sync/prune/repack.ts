import { PACK_MAX_BYTES, SMALL_FILE_BYTES } from '../../custody/index.js'
import { placeKey } from '../../index/index.js'
import type { Repository } from '../repository.js'
import type { ObjectSets } from './object-sets.js'
import { placeOf } from './new-packs.js'
import { copyLiveBlobs } from './repack-copy.js'
import type { Blob, PlannedPack, RepackInit, RepackPlan, Repacked, RepackProgress } from './repack-types.js'

export type { RepackClaim, RepackInit, Repacked, RepackPlan, RepackProgress } from './repack-types.js'

/** The share of the content held that may stay unused: as restic's `prune --max-unused` default. */
const MAX_UNUSED = 0.05
/**
 * The largest object taken for a pack: a pack stops before 16 MiB, its first blob alone may pass
 * it by a small file. A listing that says more is not a pack of ours, and is never fetched whole.
 */
const MAX_PACK_BYTES = PACK_MAX_BYTES + SMALL_FILE_BYTES + 16
/** The most bytes of old packs one run reads: the rest wait for the next run. */
const MAX_READ_BYTES = 4 * 1024 ** 3

/**
 * Which live packs to rewrite (docs/retention.md, "Repack"): the most dead first, until what stays
 * unused is at most {@link MAX_UNUSED} of the content held. Only packs whose every live blob this
 * device's own record names, as this device's index still holds it: a pack another device's
 * record names stays whole, and one an earlier run moved waits for the publish that names the move.
 */
export function planRepack (sets: ObjectSets, init: RepackInit, live = sets.livePacks(init.deviceId)): RepackPlan {
  const packs: PlannedPack[] = []
  let waiting = 0
  let waitingBytes = 0
  let read = 0
  for (const { pack, dead } of packsToRewrite(live)) {
    const blobs = ownBlobs(sets, init, pack.cid)
    if (blobs === undefined) {
      waiting++
      waitingBytes += dead
      continue
    }
    if (read + pack.size > MAX_READ_BYTES) break
    read += pack.size
    packs.push({ cid: pack.cid, size: pack.size, dead, blobs })
  }
  return { packs, waiting, waitingBytes }
}

type LivePack = ReturnType<ObjectSets['livePacks']>[number]

/**
 * The live packs worth rewriting (`live` as `livePacks` orders them, most dead first), while what
 * stays unused passes {@link MAX_UNUSED} of the content held once the rewritten packs are gone.
 * So the prune after that needs to rewrite none. Each one yielded counts as freed, planned or waiting.
 */
export function * packsToRewrite (live: readonly LivePack[]): Generator<{ readonly pack: LivePack, readonly dead: number }> {
  let held = live.reduce((sum, p) => sum + p.size, 0)
  // Only what a repack here can free counts: a pack another device's record names stays whatever.
  const movable = (p: LivePack): boolean => p.movable && p.size <= MAX_PACK_BYTES
  let unused = live.filter(movable).reduce((sum, p) => sum + Math.max(0, p.size - p.liveBytes), 0)
  for (const pack of live) {
    const dead = pack.size - pack.liveBytes
    if (unused <= MAX_UNUSED * held || dead <= 0) return
    if (!movable(pack)) continue
    yield { pack, dead }
    unused -= dead
    // Its live bytes stay, in a new pack; its unused ones go with it.
    held -= dead
  }
}

/** The pack's live blobs; undefined when this device's record of one names another place now. */
function ownBlobs (sets: ObjectSets, init: RepackInit, cid: string): Blob[] | undefined {
  const blobs: Blob[] = sets.liveBlobs(cid).map(b => ({ ...b, pack: cid }))
  const places = blobs.map(b => ({ cid: b.file, objects: placeOf(b) }))
  const placed = init.index.contentMoves.placed(init.deviceId, places)
  return places.every(p => placed.has(placeKey(p))) ? blobs : undefined
}

/** Only the count of a plan: what a dry run reports. */
export function plannedCounts (plan: RepackPlan): Repacked {
  const blobs = plan.packs.flatMap(p => p.blobs)
  return { packs: plan.packs.length, blobs: blobs.length, bytes: blobs.reduce((s, b) => s + b.length, 0), freed: plan.packs.reduce((s, p) => s + p.dead, 0), made: 0, waiting: plan.waiting, waitingBytes: plan.waitingBytes }
}

/**
 * Plans, then moves what the plan names with the index `claim` gives (see {@link copyLiveBlobs}); a
 * claim refused is counted and said, and nothing moves. The claim is let go at the end.
 */
export async function repackPlanned (repository: Repository, sets: ObjectSets, init: RepackInit, options: { readonly dir: string, readonly signal?: AbortSignal, readonly onProgress?: (event: RepackProgress) => void }): Promise<Repacked> {
  // The sets do not change while it runs: only which records are this device's is read again.
  const live = sets.livePacks(init.deviceId)
  // New packs a killed repack stored before their records: this run may make them again.
  const unrecorded = repository.store.abandonedUploads.packsNotedBefore(Date.now())
  // Whether a pack is worth rewriting needs no record: the index is claimed only then, and the
  // plan made once, from the index held (another prune may have moved these files since).
  const wanted = unrecorded.length > 0 || !packsToRewrite(live).next().done
  const claim = init.claim !== undefined && wanted ? await init.claim() : undefined
  if (claim !== undefined && 'skipped' in claim) {
    // Said only where something would move: packs that all wait for a publish need no claim.
    const plan = planRepack(sets, init, live)
    return plan.packs.length === 0 ? plannedCounts(plan) : { ...plannedCounts(plan), skipped: claim.skipped }
  }
  try {
    const held = claim === undefined ? init : { ...init, index: claim.index }
    const plan = planRepack(sets, held, live)
    const done = plan.packs.length === 0 ? plannedCounts(plan) : await copyLiveBlobs(repository, plan, { ...held, ...options, maxPackBytes: MAX_PACK_BYTES })
    leftUnrecorded(repository, held.index, unrecorded)
    return done
  } finally {
    claim?.release()
  }
}


/**
 * Of the new packs a killed repack stored, those no record names once this repack is done: it
 * made them again (recorded) or made others. They are marked for the next prune to delete.
 * Called only while this process holds the index: no other repack is storing then.
 */
function leftUnrecorded (repository: Repository, index: RepackInit['index'], packs: readonly string[]): void {
  if (packs.length === 0) return
  const recorded = index.content.namedObjects(packs)
  const notes = repository.store.abandonedUploads
  notes.forget([...recorded])
  notes.relabel(packs.filter(cid => !recorded.has(cid)), 'pack-left')
}
