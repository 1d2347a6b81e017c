import { statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { STATE_NAMES } from '../../config/index.js'
import { failpoint } from '../../util/failpoint.js'
import { CollectEvery, releaseMemory } from '../../util/release-memory.js'
import { testKnob } from '../../util/test-knob.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import type { ProgressEvent, ProgressOptions } from '../../util/progress.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import type { StoredUpload, UploadsSeen } from '../../store/index.js'
import type { Repository } from '../repository.js'
import { removeDeadRunFiles } from '../state/index.js'
import { liveChain, replacedChain, type Chain } from './chains.js'
import { ObjectSets, type CandidateKind } from './object-sets.js'
import { notePruned } from './outcome.js'
import { announceDead, dropPreviousList, withinListBound } from './announce-dead.js'
import { listPointer } from '../prune-list/index.js'
import { checkOwnPublishHeld, contended } from './own-publish-held.js'
import { Refusals, type RefusedDeletes } from './refusals.js'
import { readNames } from './segment-names.js'
import { planRepack, plannedCounts, repackPlanned, type RepackInit, type Repacked, type RepackProgress } from './repack.js'

/** Objects deleted a call at a time: a service reads its listing's head once a batch. Crash tests make it small. */
const DELETE_BATCH = testKnob('CIDSYNC_TEST_PRUNE_BATCH', 500)

/** What a prune is doing: reading the chains' segments, then deleting. */
export type PruneProgress =
  | ProgressEvent<'prune:read', { readonly segments: number }>
  | ProgressEvent<'prune:deleted', { readonly objects: number, readonly bytes: number }>
  | RepackProgress

export interface PruneInit extends ProgressOptions<PruneProgress> {
  /** An object stored less than this long ago is never deleted (ms). */
  readonly marginMs: number
  readonly now: Date
  /** Plan only: nothing is deleted. */
  readonly dryRun?: boolean
  /** This device's index, where a repack records what it moves. Without it, mostly dead packs stay whole. */
  readonly repack?: RepackInit
}

/** What a prune found and did, by kind. */
export interface Pruned {
  readonly pointer: string
  /** Objects no kept publish needs, deleted (or, in a dry run, to delete), and their bytes. */
  readonly deleted: Readonly<Record<CandidateKind, number>>
  readonly bytes: number
  /** Objects no kept publish needs that are younger than the margin: kept this time. */
  readonly young: number
  /** Chains forgets replaced that are still within the margin: kept whole this time. */
  readonly chainsHeld: number
  readonly segmentsRead: number
  /**
   * Publishes of other devices among those deleted: their plain roots, which only they know,
   * may still hold the blocks on a service until each of them prunes too.
   */
  readonly othersForgotten: number
  /** Dead content past what one prune list names: the next run deletes it. */
  readonly deferred?: number
  /** Every object the store listed, and their bytes, before anything was deleted. */
  readonly held: { readonly objects: number, readonly bytes: number }
  /** Objects the store refused to delete: they stay. Absent in a dry run, which asks nothing. */
  readonly refused?: RefusedDeletes
  /** Mostly dead packs whose live blobs were copied into new packs; absent without `repack`. */
  readonly repacked?: Repacked
}

/**
 * Deletes every object no kept publish needs (docs/retention.md, "Prune"): the manifests and
 * segments of chains a forget replaced more than the margin ago, the content objects whose
 * records name no file of a kept publish, and this device's plain roots of forgotten publishes.
 * Kept are: the pointer's chain, its segments, the objects of every record a kept row names,
 * the chains replaced within the margin, and anything stored within the margin. The pointer is
 * read again before anything is deleted: a publish made meanwhile stops the prune. Deletes
 * roots, content, segments, then manifests oldest first, so the next run finishes a cut one.
 */
export async function prune (repository: Repository, init: PruneInit): Promise<Pruned> {
  const { config } = repository
  const dir = join(config.stateDir, STATE_NAMES.snapshots)
  makeDirsSync(dir, 0o700)
  const fetch = repository.readContext('prune', { signal: init.signal })
  const pointer = (await repository.pointers.current(config.namespace, config.network, { signal: init.signal })).snapshotCid
  await checkOwnPublishHeld(repository, 'prune', init.signal, pointer)
  await removeDeadRunFiles(config.stateDir)
  await removeDeadWork(dir)
  const sets = new ObjectSets(join(dir, `prune-${process.pid}.sqlite`))
  // This device's content index objects written again as few, beside the reading below: its
  // sealing and uploads wait where the reading works, and the other way round.
  const compacting = init.repack?.compactIndex === undefined || init.dryRun === true ? Promise.resolve([]) : init.repack.compactIndex(init.signal)
  // Awaited below, or in `finally` where the reading failed first: never a rejection left unowned.
  compacting.catch(() => {})
  try {
    const live = await liveChain(repository, pointer, fetch)
    const held: Chain[] = []
    const expired: Chain[] = []
    for (const { cid, manifest } of live.manifests) {
      if ((manifest.replaced?.length ?? 0) === 0) continue
      // The forgetting device's clock may run behind: for the chain that forget replaced (the first
      // listed), the service's time of the upload counts too. The older ones a head carries on were
      // dated by earlier forgets; its upload time would hold them again after every forget.
      const uploaded = init.marginMs === 0 ? 0 : (await repository.objects.stat(cid, { signal: init.signal }))?.storedAt ?? 0
      for (const [i, entry] of (manifest.replaced ?? []).entries()) {
        const chain = await replacedChain(repository, entry.cid, fetch)
        const at = i === 0 ? Math.max(Date.parse(entry.at), uploaded) : Date.parse(entry.at)
        if (init.now.getTime() - at < init.marginMs) held.push(chain)
        else expired.push(chain)
      }
    }
    for (const chain of [live, ...held]) markKept(sets, chain)
    // Every segment a kept chain lists: its rows name the files kept, its records their objects.
    const kept = [live, ...held]
    const named = { kept: live.manifests.map(m => m.manifest), held: held.flatMap(c => c.manifests.map(m => m.manifest)) }
    // Each segment's fetch leaves its sealed, opened and inflated bytes as garbage V8 takes late.
    const collect = new CollectEvery()
    const segmentsRead = await readNames(repository, named, kept.flatMap(c => c.v1), fetch, {
      take: (path, whole) => {
        sets.take(path, whole)
        collect.note(statSync(path).size)
      },
      settle: (bases) => { sets.settle(bases) }
    })
    init.onProgress?.({ type: 'prune:read', detail: { segments: segmentsRead } })
    // The rest of that garbage goes before the repack reads its packs.
    releaseMemory()
    failpoint('prune:read')
    for (const chain of expired) {
      chain.manifests.forEach((m, i) => { sets.candidates([m.cid], 'manifest', chain.manifests.length - i) })
      sets.candidates(chain.manifests.flatMap(m => m.manifest.devices.flatMap(d => d.segments.map(s => s.cid))), 'segment')
      sets.candidates(chain.v1, 'manifest')
    }
    // The plain roots this device uploaded for publishes no kept chain holds: a root holds every
    // block it links on a service, so an old one would keep what the rest of the prune frees.
    const keptManifests = new Set(kept.flatMap(c => c.manifests.map(m => m.cid)))
    sets.candidates(repository.store.plainRoots.roots().filter(r => !keptManifests.has(r.manifest)).map(r => r.root), 'root')
    // What this device's publish attempts uploaded and left for another device's: no chain names them.
    // The publish in flight may name some of the same bytes once its pointer moves: those stay.
    const inFlight = repository.store.current()
    if (inFlight !== undefined && 'files' in inFlight && inFlight.files !== null) sets.live(inFlight.files.map(f => f.cid))
    const abandoned = repository.store.abandonedUploads.all()
    // A repack's new pack a record names was recorded before its note was forgotten: it stays.
    // One a later repack finished without recording goes. Without the index to ask, both wait.
    const packs = abandoned.filter(a => a.kind === 'pack' || a.kind === 'pack-left')
    const recorded = init.repack?.index.content.namedObjects(packs.map(a => a.cid))
    if (recorded !== undefined) sets.candidates(packs.filter(a => a.kind === 'pack-left' && !recorded.has(a.cid)).map(a => a.cid), 'content')
    for (const kind of ['manifest', 'segment'] as const) sets.candidates(abandoned.filter(a => a.kind === kind).map(a => a.cid), kind)
    // A prune's list the list pointer never named (a run stopped between its upload and the pointer):
    // counted with the manifests. The one the pointer names now stays: publishes read it.
    sets.candidates(abandoned.filter(a => a.kind === 'list').map(a => a.cid), 'manifest')
    const currentList = await listPointer(repository, init.signal)
    if (currentList !== undefined) sets.live([currentList])
    // The old content index objects go as content does.
    sets.candidates(await compacting, 'content')
    // What a killed prune was deleting: those the store no longer lists are logged for the mirrors below.
    const log = repository.store.mirrorLog
    sets.watch(log.deleting())
    const listed = { objects: 0, bytes: 0 }
    // Each candidate's uploads as this walk reads them: the deletes below need not walk the listing again.
    const walk: { uploads: boolean, newestAt?: number } = { uploads: false }
    const onUpload = (cid: string, upload: StoredUpload): void => {
      sets.upload(cid, upload)
      walk.uploads = true
      if (upload.storedAt !== undefined) walk.newestAt = Math.max(walk.newestAt ?? upload.storedAt, upload.storedAt)
    }
    for await (const object of repository.objects.list({ signal: init.signal, onUpload })) {
      sets.listed(object.cid, object.size, object.storedAt)
      listed.objects++
      listed.bytes += object.size
    }
    failpoint('prune:listed')
    const before = init.now.getTime() - init.marginMs
    const { dead, deferred } = withinListBound(sets.dead(before))
    // Another device's plain root of a forgotten publish holds its blocks on a service: only that device knows it.
    const self = repository.store.ownPublished()?.deviceId
    // Only those this run deletes: a head carries chains an earlier prune emptied already.
    const going = new Set(dead.map(d => d.cid))
    const othersForgotten = new Set(expired.flatMap(chain => chain.manifests.filter(m => m.manifest.device !== self && going.has(m.cid)).map(m => m.cid))).size
    const result = { pointer, young: sets.young(before), chainsHeld: held.length, segmentsRead, held: listed, othersForgotten, ...(deferred > 0 ? { deferred } : {}) }
    const deleted: Record<CandidateKind, number> = { root: 0, content: 0, segment: 0, manifest: 0 }
    const bytes = dead.reduce((sum, d) => sum + d.size, 0)
    if (init.dryRun === true) {
      for (const d of dead) deleted[d.kind]++
      const repacked = init.repack === undefined ? {} : { repacked: plannedCounts(planRepack(sets, init.repack)) }
      return notePruned(repository, init, { ...result, deleted, bytes, ...repacked })
    }
    // Announced before the pointer is read again: a publish that moves it after that read finds the list.
    const list = await announceDead(repository, dead, init.signal)
    failpoint('prune:announced')
    const now = (await repository.pointers.current(config.namespace, config.network, { signal: init.signal })).snapshotCid
    if (now !== pointer) throw contended('prune', now, pointer)
    followPointer(repository, pointer, live)
    failpoint('prune:checked')
    finishKilled(repository, sets)
    // An upload made since the list was announced stays too: a publish that found the list made it.
    const seen = walk.uploads ? (cids: readonly string[]): UploadsSeen => ({ uploads: sets.uploadsOf(cids), newestAt: walk.newestAt }) : undefined
    const done = await deleteDead(repository, dead, { signal: init.signal, storedBefore: Math.min(before, list.storedAt ?? before), seen, onProgress: init.onProgress })
    await dropPreviousList(repository, list.previous, init.signal)
    // Those a kept publish names, or the store no longer lists, need nothing more; deleted ones go next run.
    repository.store.abandonedUploads.forget([...sets.settled(abandoned.map(a => a.cid)), ...(recorded ?? [])])
    // After the deletes: a repack deletes nothing, and a failed one leaves the prune's work done.
    let repacked: Repacked | undefined
    try {
      if (init.repack !== undefined) repacked = await repackPlanned(repository, sets, init.repack, { dir, signal: init.signal, onProgress: init.onProgress })
    } catch (err) {
      notePruned(repository, init, { ...result, ...done })
      throw err
    }
    return notePruned(repository, init, { ...result, ...done, ...(repacked === undefined ? {} : { repacked }) })
  } finally {
    await compacting.catch(() => {})
    sets.close()
  }
}

interface DeleteDeadOptions {
  readonly signal?: AbortSignal
  readonly storedBefore: number
  /** What the prune's walk read of a batch's uploads, where the store told it. */
  readonly seen?: (cids: readonly string[]) => UploadsSeen
  readonly onProgress?: PruneInit['onProgress']
}

/**
 * Deletes `dead` a batch at a time, and counts and logs for the mirrors what the store answers it
 * removed: another prune may have removed some first, and the store may refuse some. Each batch is
 * noted before it is asked, so a kill between the delete and the log is finished by the next run.
 */
async function deleteDead (repository: Repository, dead: ReturnType<ObjectSets['dead']>, options: DeleteDeadOptions): Promise<Pick<Pruned, 'deleted' | 'bytes' | 'refused'>> {
  const log = repository.store.mirrorLog
  const deleted: Record<CandidateKind, number> = { root: 0, content: 0, segment: 0, manifest: 0 }
  const refusals = new Refusals()
  let objects = 0
  let bytes = 0
  for (let i = 0; i < dead.length; i += DELETE_BATCH) {
    const batch = new Map(dead.slice(i, i + DELETE_BATCH).map(d => [d.cid, d]))
    const cids = [...batch.keys()]
    log.noteDeleting(cids)
    // An object uploaded again since the margin's start stays: another device may name it now.
    // Only uploads the walk read go: one made since it is never deleted, and keeps its object listed.
    const seen = options.seen?.(cids)
    const answer = await repository.objects.deleteMany(cids, { signal: options.signal, storedBefore: options.storedBefore, ...(seen === undefined ? {} : { seen }) })
    failpoint('prune:deleted')
    const removed = answer.removed.filter(cid => batch.has(cid))
    // An index object a compaction replaced, once gone, is no longer this device's to count.
    repository.store.contentIndex.forgetObjects(removed)
    for (const cid of removed) {
      const d = batch.get(cid) as (typeof dead)[number]
      deleted[d.kind]++
      objects++
      bytes += d.size
    }
    // A refused one stays: nothing for the mirrors, and the rest of the run goes on.
    refusals.add(answer.refused, cid => batch.get(cid)?.size ?? 0)
    log.logDeletes(removed, Date.now(), cids)
    options.onProgress?.({ type: 'prune:deleted', detail: { objects, bytes } })
    failpoint('prune:batch')
  }
  return { deleted, bytes, refused: refusals.result }
}

/**
 * A prune killed between its delete and its log left what it was deleting noted: those the store
 * no longer lists are logged now, so the mirrors delete them too and a mirror behind never asks
 * the primary for them. Those still listed were not deleted; this run deletes them if still dead.
 */
function finishKilled (repository: Repository, sets: ObjectSets): void {
  const log = repository.store.mirrorLog
  const noted = log.deleting()
  if (noted.length === 0) return
  const gone = new Set(sets.unlisted())
  const deleted = noted.filter(c => gone.has(c))
  log.logDeletes(deleted)
  // Index objects it deleted are no longer this device's: a compaction must not count them.
  repository.store.contentIndex.forgetObjects(deleted)
  log.settleDeleting(noted)
}

/**
 * The mirrors move to the pointer before they delete what it replaced: else a mirror whose
 * pointer still names the old chain (a forget killed once the pointer moved, a publish not yet
 * taken in) would delete the manifest its own pointer names.
 */
function followPointer (repository: Repository, pointer: string, live: Chain): void {
  const log = repository.store.mirrorLog
  if (log.lastPointer() === pointer) return
  const head = live.manifests[0]
  const segments = head?.cid === pointer ? head.manifest.devices.flatMap(d => d.segments.map(s => s.cid)) : []
  log.logPublish(pointer, segments, SNAPSHOT_PROFILE.name)
}

/** A kept chain's manifests, segments and `/1` snapshots are kept, and where each publish holds each device's rows. */
function markKept (sets: ObjectSets, chain: Chain): void {
  for (const { manifest } of chain.manifests) for (const device of manifest.devices) sets.keptAt(device.deviceId, device.lastSeq)
  sets.live(chain.manifests.map(m => m.cid))
  sets.live(chain.manifests.flatMap(m => m.manifest.devices.flatMap(d => d.segments.map(s => s.cid))))
  sets.live(chain.v1)
}

/**
 * This process's own work file, left by a killed prune whose pid it now has (the file is made
 * exclusively). Other pids' files go with removeDeadRunFiles, once their process is gone.
 */
async function removeDeadWork (dir: string): Promise<void> {
  for (const suffix of ['.sqlite', '.sqlite-journal', '.sqlite-wal', '.sqlite-shm', '-repack.pack']) await rm(join(dir, `prune-${process.pid}${suffix}`), { force: true })
}
