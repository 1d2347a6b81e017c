import { closeSync, openSync, writeSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { HeldObject, PACK_MAX_BLOBS, PACK_MAX_BYTES, processUploadGate, SLAB_BYTES, SMALL_FILE_BYTES } from '../../custody/index.js'
import type { Index, StoredContentRow } from '../../index/index.js'
import { ContentNotFoundError, IntegrityError } from '../../errors.js'
import { failpoint } from '../../util/failpoint.js'
import { CollectEvery } from '../../util/release-memory.js'
import { testKnob } from '../../util/test-knob.js'
import type { ProgressEvent } from '../../util/progress.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import type { Repository } from '../repository.js'
import type { ObjectSets } from './object-sets.js'

/** The index a repack records its moves in, and how to let it go. */
export interface RepackClaim {
  readonly index: Index
  release: () => void
}

/**
 * What a repack plans and writes with. `index`: this device's index, read to plan. `claim`: taken
 * only once there is something to move, for the index to record in (held by this process alone
 * while it writes); or why it cannot be had now. Without `claim`, `index` is written.
 */
export interface RepackInit {
  readonly index: Index
  readonly deviceId: string
  readonly hostname: string
  readonly claim?: () => Promise<RepackClaim | { readonly skipped: string }>
  /**
   * Writes this device's content index objects again as few, when they are many, and answers the
   * old ones for the prune to delete (storing's `compactOwnIndex`).
   */
  readonly compactIndex?: (signal?: AbortSignal) => Promise<string[]>
}

/** What a repack did (or, in a dry run or when skipped, would do). */
export interface Repacked {
  /** Old packs whose live blobs were copied into new packs (or would be). */
  readonly packs: number
  readonly blobs: number
  /** Live bytes copied. */
  readonly bytes: number
  /** What the old packs hold that no kept publish needs: freed once a publish names the new packs and a prune runs. */
  readonly freed: number
  /** New packs uploaded: 0 in a dry run or when skipped. */
  readonly made: number
  /** Packs an earlier run repacked, whose old copy waits for a publish to name the new one. */
  readonly waiting: number
  /** What those waiting packs hold unused: the prune after that publish frees it. */
  readonly waitingBytes: number
  /** Planned packs that could not be read (gone, damaged, not the size listed): they stay whole. */
  readonly unread?: number
  /** The old packs were deleted in the same run, by a prune after a publish (the daemon's). */
  readonly oldDeleted?: boolean
  /** Why nothing was moved though some packs would be (another process holds the index). */
  readonly skipped?: string
}

export type RepackProgress = ProgressEvent<'prune:repacked', { readonly packs: number, readonly bytes: number }>

/** The share of the content held that may stay unused: as restic's `prune --max-unused` default. */
const MAX_UNUSED = 0.05
/**
 * The largest object taken for a pack: a pack stops before 16 MiB, its first blob alone may pass
 * it by a small file. A listing that says more is not a pack of ours, and is never fetched whole.
 */
const MAX_PACK_BYTES = PACK_MAX_BYTES + SMALL_FILE_BYTES + 16
/** The most bytes of old packs one run reads: the rest wait for the next run. */
const MAX_READ_BYTES = 4 * 1024 ** 3

interface Blob { readonly record: StoredContentRow, readonly offset: number, readonly length: number, readonly pack: string }
interface PlannedPack { readonly cid: string, readonly size: number, readonly dead: number, readonly blobs: readonly Blob[] }
export interface RepackPlan { readonly packs: PlannedPack[], readonly waiting: number, readonly waitingBytes: number }

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
  for (const { pack, dead } of rewritable(live)) {
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
 * The live packs worth rewriting, most dead first, while what stays unused passes
 * {@link MAX_UNUSED} of the content held. Each one yielded counts as freed, planned or waiting.
 */
function * rewritable (live: readonly LivePack[]): Generator<{ readonly pack: LivePack, readonly dead: number }> {
  const held = live.reduce((sum, p) => sum + p.size, 0)
  // Only what a repack here can free counts: a pack another device's record names stays whatever.
  const movable = (p: LivePack): boolean => p.movable && p.size <= MAX_PACK_BYTES
  let unused = live.filter(movable).reduce((sum, p) => sum + Math.max(0, p.size - p.liveBytes), 0)
  for (const pack of live) {
    const dead = pack.size - pack.liveBytes
    if (unused <= MAX_UNUSED * held || dead <= 0) return
    if (!movable(pack)) continue
    yield { pack, dead }
    unused -= dead
  }
}

/** The pack's live blobs with this device's records of them; undefined when a record names another place now. */
function ownBlobs (sets: ObjectSets, init: RepackInit, cid: string): Blob[] | undefined {
  const blobs: Blob[] = []
  const live = sets.liveBlobs(cid)
  const records = ownRecords(init, live.map(b => b.file))
  for (const { file, offset, length } of live) {
    const record = records.get(file)
    if (record === undefined || record.objects !== JSON.stringify([[cid, offset, length]])) return undefined
    blobs.push({ record, offset, length, pack: cid })
  }
  return blobs
}

/** Only the count of a plan: what a dry run reports. */
export function plannedCounts (plan: RepackPlan): Repacked {
  const blobs = plan.packs.flatMap(p => p.blobs)
  return { packs: plan.packs.length, blobs: blobs.length, bytes: blobs.reduce((s, b) => s + b.length, 0), freed: plan.packs.reduce((s, p) => s + p.dead, 0), made: 0, waiting: plan.waiting, waitingBytes: plan.waitingBytes }
}

/**
 * Plans, then moves what the plan names with the index `claim` gives (see {@link repack}); a
 * claim refused is counted and said, and nothing moves. The claim is let go at the end.
 */
export async function repackPlanned (repository: Repository, sets: ObjectSets, init: RepackInit, options: { readonly dir: string, readonly signal?: AbortSignal, readonly onProgress?: (event: RepackProgress) => void }): Promise<Repacked> {
  // The sets do not change while it runs: only which records are this device's is read again.
  const live = sets.livePacks(init.deviceId)
  // Whether a pack is worth rewriting needs no record: the index is claimed only then, and the
  // plan made once, from the index held (another prune may have moved these files since).
  const claim = init.claim !== undefined && !rewritable(live).next().done ? await init.claim() : undefined
  if (claim !== undefined && 'skipped' in claim) {
    // Said only where something would move: packs that all wait for a publish need no claim.
    const plan = planRepack(sets, init, live)
    return plan.packs.length === 0 ? plannedCounts(plan) : { ...plannedCounts(plan), skipped: claim.skipped }
  }
  try {
    const held = claim === undefined ? init : { ...init, index: claim.index }
    const plan = planRepack(sets, held, live)
    return plan.packs.length === 0 ? plannedCounts(plan) : await repack(repository, plan, { ...held, ...options })
  } finally {
    claim?.release()
  }
}

/**
 * Copies the planned packs' live blobs, still sealed, into new packs, uploads each, then records
 * each moved blob's new place as this device's record of its file (its next sequence number).
 * Sealing is convergent, so the bytes are the same: any version of a file's record opens them.
 * Nothing is deleted here. The old pack goes at a later prune, once the pointer's chain holds the
 * new records: until then its newest record still names it. A kill before the records leaves an
 * upload no record names; the next run copies the same blobs again.
 */
async function repack (repository: Repository, plan: RepackPlan, init: RepackInit & { readonly dir: string, readonly signal?: AbortSignal, readonly onProgress?: (event: RepackProgress) => void }): Promise<Repacked> {
  const { config, store } = repository
  const gate = processUploadGate(config.content.uploadRate, config.content.concurrency)
  // Named as the prune's own files: a run killed here leaves it for the next prune's sweep.
  const spool = join(init.dir, `prune-${process.pid}-repack.pack`)
  // Counted as done, not as planned: a pack that cannot be read stays whole, and so does a blob whose record changed.
  const counts = { blobs: 0, bytes: 0, unread: 0 }
  // The old packs a recorded move came from: only those go at the prune after a publish.
  const from = new Set<string>()
  let pending: Array<Blob & { readonly at: number }> = []
  let size = 0
  let made = 0
  let fd: number | undefined
  const flush = async (): Promise<void> => {
    if (fd === undefined) return
    closeSync(fd)
    fd = undefined
    const cid = await gate.slots.run(async () => (await repository.objects.put(spool, SNAPSHOT_PROFILE, {
      name: 'cidsync-pack.sealed', signal: init.signal, throttle: async (bytes, signal) => { await gate.bucket.take(bytes, signal) }
    })).cid, init.signal)
    // As a stored pack: logged for the mirrors, kept from any prune list read, a deal asked, before its records.
    store.mirrorLog.logObjects([{ cid, profile: SNAPSHOT_PROFILE.name }])
    store.pruneList.release(cid)
    if (config.snapshot.deal && repository.deals !== undefined) {
      await repository.deals.addCid(cid, { signal: init.signal })
      init.index.remote.requestDeal(cid, init.deviceId)
    }
    failpoint('prune:repack-stored')
    const recorded = recordMoved(init, pending.map(b => ({ ...b, object: cid })))
    for (const moved of recorded) {
      counts.blobs++
      counts.bytes += moved.length
      from.add(moved.pack)
    }
    if (recorded.length > 0) made++
    failpoint('prune:repack-recorded')
    pending = []
    size = 0
    await rm(spool, { force: true })
    init.onProgress?.({ type: 'prune:repacked', detail: { packs: made, bytes: counts.bytes } })
  }
  // One pack's slabs at a time, each used again for the next pack: no pack is copied whole.
  const slabs = new Slabs()
  // Reading and storing each pack leaves buffers V8 takes late.
  const collect = new CollectEvery()
  try {
    await rm(spool, { force: true })
    for (const pack of plan.packs) {
      const bytes = await packBytes(repository, pack, slabs, init.signal)
      // Gone, damaged, not the size listed, or a record reading past its end: that pack stays whole.
      if (bytes === undefined || pack.blobs.some(b => b.offset + b.length > Math.min(bytes.byteLength, pack.size))) {
        counts.unread++
        continue
      }
      for (const blob of pack.blobs) {
        if (pending.length > 0 && (size + blob.length > PACK_MAX_BYTES || pending.length >= PACK_MAX_BLOBS)) await flush()
        // Made 0600 before anything is written: it holds sealed content.
        fd ??= openSync(spool, 'wx', 0o600)
        writeViews(fd, bytes.range(blob.offset, blob.length), size)
        pending.push({ ...blob, at: size })
        size += blob.length
      }
      slabs.giveBack(bytes)
      collect.note(pack.size)
    }
    await flush()
  } finally {
    if (fd !== undefined) closeSync(fd)
    await rm(spool, { force: true })
  }
  const moved = plan.packs.filter(p => from.has(p.cid))
  return { ...counts, packs: moved.length, freed: moved.reduce((sum, p) => sum + p.dead, 0), made, waiting: plan.waiting, waitingBytes: plan.waitingBytes }
}

/** Writes `views` one after another into `fd` from `position`, each whole. */
function writeViews (fd: number, views: readonly Uint8Array[], position: number): void {
  let at = position
  for (const view of views) {
    for (let done = 0; done < view.byteLength;) done += writeSync(fd, view, done, view.byteLength - done, at + done)
    at += view.byteLength
  }
}

/** The size of the slabs a pack is read into. Tests make it small, so every blob spans several. */
const REPACK_SLAB_BYTES = testKnob('CIDSYNC_TEST_REPACK_SLAB', SLAB_BYTES)

/** The slabs packs are read into: those of the pack before are filled again. */
class Slabs {
  private readonly spare: Uint8Array[] = []
  readonly next = (): Uint8Array => this.spare.pop() ?? new Uint8Array(REPACK_SLAB_BYTES)
  /** A pack's slabs, once nothing more is read of it. */
  giveBack (held: HeldObject): void {
    for (const view of held.slabs) this.spare.push(new Uint8Array(view.buffer, 0, REPACK_SLAB_BYTES))
  }
}

/** The pack's bytes, verified; undefined when the store no longer holds it or it is not what was listed. */
async function packBytes (repository: Repository, pack: PlannedPack, slabs: Slabs, signal?: AbortSignal): Promise<HeldObject | undefined> {
  try {
    return new HeldObject(await repository.objects.getBytes(pack.cid, SNAPSHOT_PROFILE, { maxBytes: pack.size, signal, slab: slabs.next }))
  } catch (err) {
    if (err instanceof ContentNotFoundError || err instanceof IntegrityError) return undefined
    throw err
  }
}

/**
 * Records each moved blob's new place, in one transaction. A record that changed since the plan
 * (the file stored again meanwhile) is left as it is: the new pack then holds a blob nobody names.
 */
function recordMoved (init: RepackInit, moved: ReadonlyArray<Blob & { readonly at: number, readonly object: string }>): ReadonlyArray<Blob & { readonly at: number, readonly object: string }> {
  const records = ownRecords(init, moved.map(m => m.record.cid))
  const still = moved.filter(m => records.get(m.record.cid)?.objects === m.record.objects)
  init.index.content.record(init.deviceId, init.hostname, still.map(m => ({
    cid: m.record.cid, size: m.record.size, sealing: m.record.sealing, keyId: m.record.keyId, keySalt: m.record.keySalt,
    objects: JSON.stringify([[m.object, m.at, m.length]])
  })))
  return still
}

/** This device's record of each file's content in the index, as it stands now: one query for them all. */
function ownRecords (init: RepackInit, files: readonly string[]): Map<string, StoredContentRow> {
  const own = new Map<string, StoredContentRow>()
  for (const [file, rows] of init.index.content.lookupMany(files)) {
    // The same order as a lookup of one file: newest first, so its first of this device is the one in use.
    const mine = rows.find(r => r.deviceId === init.deviceId)
    if (mine !== undefined) own.set(file, mine)
  }
  return own
}
