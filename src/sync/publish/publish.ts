import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { PointerUnreadableError, PublishContendedError, PublishStateError, PublishWriteError } from '../../errors.js'
import type { SyncService } from '../sync-components.js'
import { ENGINE, parseManifest } from '../../snapshot/index.js'
import { checkDrop, ownEntries } from './drop-guard.js'
import type { ActiveStep, JobAt, PublishJob, SyncStore } from '../state/index.js'
import type { PublishComponents, PublishInit, Published } from './publish-init.js'
import { currentPointer, fetchAndMerge } from './merge.js'
import { knownHead, noteSetBack, olderInChain } from './rollback.js'
import { chainsOf, writePublication, type Avoid } from './publication.js'
import { failedDrill, type FailedDrill } from '../verify/index.js'
import { uploadAll } from './upload-once.js'
import { uploadPlainRoot } from './publish-root.js'
import { checkPruneList } from '../prune-list/index.js'
import { failpoint } from '../../util/failpoint.js'
import { publishNow } from '../../util/clock.js'

import { SNAPSHOT_PROFILE } from '../read/index.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { STATE_NAMES } from '../../config/index.js'
export { SNAPSHOT_PROFILE }
/** Other devices publishing between our GET and PUT this many times in a row: the job starts over after a wait. */
export const MAX_MERGES = 3

/** What a step is given: the publish's init, and where the name step says how many records it dropped. */
interface StepInit extends PublishInit {
  readonly noteStoredAgain: (records: number) => void
}

type StepRun<S extends ActiveStep> = (components: PublishComponents, init: StepInit, store: SyncStore, job: JobAt<S>) => Promise<PublishJob>

/**
 * Publishes the index: snapshot, CID, upload, deal, pointer (merging first if another device
 * published since our base), then the IPNS name. Each step is recorded in `sync.sqlite` before the
 * next begins and each is idempotent, so a run cut short anywhere (kill -9 included) resumes at
 * its step. Nothing changed since the last publish: no new snapshot. A job whose step is unknown,
 * or that other devices kept outrunning, is given up loudly, so the next publish starts over.
 */
export async function publish (components: PublishComponents, init: PublishInit = {}): Promise<Published> {
  const { config, store } = components.repository
  const marks = init.marks ?? []
  if (marks.length > 0 && store.current() !== undefined) {
    // A job cut short was not asked for these labels: it finishes first, and a labelled one follows.
    await publish(components, { ...init, marks: undefined })
  }
  try {
    const resumed = store.current()
    if (resumed === undefined) {
      const last = store.lastPublished()
      const broken = brokenLastPublish(store)
      if (broken !== undefined) components.logger.warn({ cid: broken.pointer, failed: broken.object }, 'the last restore drill found this device\'s last publish not restorable: publishing afresh')
      // A labelled publish is made even when nothing changed: the label needs a publish of its own.
      if (last !== undefined && last.marker === components.index.changeMarker() && init.repairPointer !== true && broken === undefined && marks.length === 0) {
        const pulled = await pullOnly(components, init, store, last.cid)
        if (pulled !== undefined) return pulled
      }
      checkDrop(components.index, components.deviceId, config, store, init.confirmDrop === true)
    }
    if (resumed !== undefined && 'problem' in resumed) abandon(store, resumed.id, resumed.problem)
    let job: PublishJob = resumed ?? store.start(store.base() ?? null, marks)
    let storedAgain = 0
    const stepInit: StepInit = { ...init, noteStoredAgain: (records) => { storedAgain += records } }
    for (let steps = 0; ; steps++) {
      init.signal?.throwIfAborted()
      components.logger.debug({ job: job.id, step: job.step }, 'publish step')
      components.onStep?.(job.step, job.merges)
      failpoint(`publish:${job.step}`)
      if (job.step === 'done') return { cid: job.snapshotCid, entries: job.entries, skipped: false, merged: job.merges, ...(job.marks.length > 0 ? { marks: job.marks } : {}), ...(storedAgain > 0 ? { storedAgain } : {}) }
      if (steps > MAX_STEPS) abandon(store, job.id, `ran ${steps} steps without finishing`)
      job = await runStep(job.step, components, stepInit, store, job)
    }
  } catch (err) {
    // A full disk answers SQLite's or the system's bare code: a publish says what it means and what to do.
    const failure = PublishWriteError.of(config.stateDir, err) ?? err
    try {
      const current = store.current()
      if (current !== undefined) store.failed(current.id, (failure as Error).message)
    } catch (recordErr) {
      // On a full disk recording the failure fails too: the failure itself is what the caller needs.
      if (PublishWriteError.of(config.stateDir, recordErr) === undefined) throw recordErr
    }
    throw failure
  }
}

/**
 * The last drill failed on what this device last published, after it published it: "unchanged"
 * would leave the pointer on it, so the publish is made again, without the objects that failed.
 */
function brokenLastPublish (store: SyncStore): FailedDrill | undefined {
  const drill = failedDrill(store)
  const last = store.lastPublished()
  if (drill === undefined || last === undefined || drill.pointer !== last.cid) return undefined
  return last.at === null || drill.checkedAt >= last.at ? drill : undefined
}

/** What the last failed drill could not use, kept out of the next publication. */
function unusableObjects (store: SyncStore): Avoid {
  const drill = failedDrill(store)
  if (drill === undefined) return { cids: new Set(), self: false }
  return { cids: new Set(drill.object === null ? [] : [drill.object]), self: drill.object === null }
}

function abandon (store: SyncStore, id: number, why: string): never {
  store.abandon(id, why)
  throw new PublishStateError(`publish job ${id} ${why}: it was given up, and the next publish starts over`)
}

/** The step's run from the table, typed for the job at that step. */
async function runStep<S extends ActiveStep> (step: S, components: PublishComponents, init: StepInit, store: SyncStore, job: JobAt<S>): Promise<PublishJob> {
  const run: StepRun<S> = STEPS[step]
  return await run(components, init, store, job)
}

/** A publish runs each step once, the snapshot and pointer steps again per merge: more is a loop. */
const MAX_STEPS = 6 * (MAX_MERGES + 2)

const STEPS: { readonly [S in ActiveStep]: StepRun<S> } = {
  snapshot: async (components, init, store, job) => {
    const { config, passphrase } = components.repository
    const dir = join(config.stateDir, STATE_NAMES.snapshots)
    makeDirsSync(dir, 0o700)
    const made = await writePublication({
      index: components.index, self: components.deviceId, previous: job.baseCid === '' ? null : job.baseCid, binding: { namespace: config.namespace, network: config.network }, dir, label: `publish-${job.id}-${job.merges}`,
      policy: { afterDeltas: config.snapshot.compactAfterDeltas, fraction: config.snapshot.compactFraction },
      avoid: unusableObjects(store),
      marks: job.marks,
      encryption: config.snapshot.encryption, stateDir: config.stateDir, passphrase, signal: init.signal, clock: components.clock
    })
    const manifest = JSON.stringify(made.manifest)
    store.manifestCache.put(made.manifestFile.cid, JSON.stringify({ kind: 'manifest', manifest: made.manifest }))
    components.logger.info({ segments: made.files.length - 1, bytes: made.manifest.bytesAdded, entries: made.manifest.entries }, 'publish: segments written')
    return store.snapshotted(job, { snapshotPath: made.manifestFile.path, snapshotCid: made.manifestFile.cid, files: made.files, manifest, marker: made.marker, entries: made.manifest.entries })
  },
  upload: async (components, init, store, job) => {
    // The client checks that the service computed each CID; an upload already made is reused.
    const reused = await uploadAll(components.repository.home, job.files, init.signal)
    if (reused > 0) components.logger.info({ reused }, 'files already uploaded (an answer was lost): reused')
    // After the manifest, which it links: a pinning service that pins it holds the whole history.
    await uploadPlainRoot(components, init, store, job)
    return store.uploaded(job)
  },
  deal: async (components, init, store, job) => {
    if (components.repository.config.snapshot.deal) {
      // Every new segment and the manifest: the service aggregates small files.
      for (const file of job.files) {
        await components.repository.home.deals.addCid(file.cid, { signal: init.signal })
        components.index.remote.requestDeal(file.cid, components.deviceId)
      }
    }
    return store.dealt(job)
  },
  pointer: async (components, init, store, job) => await pointerStep(components, init, store, job),
  name: async (components, init, store, job) => {
    const { home, config } = components.repository
    const manifest = parseManifest(job.manifest, job.snapshotCid)
    // First: killed anywhere in this step, the step runs again and so does the check.
    const own = manifest.devices.find(d => d.deviceId === components.deviceId)
    init.noteStoredAgain(await checkPruneList(components, own?.lastSeq ?? 0, init.signal))
    const keyName = await ipnsKeyName(home, store, config.snapshot.ipnsKey, init.signal)
    if (keyName !== undefined) {
      const published = await home.names.publish(keyName, job.snapshotCid, { signal: init.signal })
      store.noteIpnsPublished(keyName, published.ipnsId, job.snapshotCid)
    }
    await removeFiles(job.files)
    const segments = manifest.devices.flatMap(d => d.segments.map(s => s.cid))
    return store.finishPublish(job, { ownEntries: ownEntries(components.index, components.deviceId), replicate: { segments, profile: SNAPSHOT_PROFILE.name }, at: publishNow(components.clock) })
  }
}

/**
 * Nothing changed here since the last publish; if another device published since, take its rows
 * (the pointer's snapshot already holds ours), so this index shows every device's files. Answers
 * what the pointer holds, with its entry count; undefined when the pointer lacks what it held
 * before (set back): then a publish is made on top of it, as if something had changed.
 */
async function pullOnly (components: PublishComponents, init: PublishInit, store: SyncStore, last: string): Promise<Published | undefined> {
  const current = await currentPointer(components, init.signal)
  const entries = current?.memories ?? store.lastPublished()?.entries ?? 0
  if (current === undefined || current.cid === store.base() || current.cid === last) {
    if (current !== undefined) store.notePointer(current.cid)
    return { cid: current?.cid ?? last, entries, skipped: true, merged: 0 }
  }
  const head = knownHead(store)
  if (head !== undefined && olderInChain(store.manifestCache, head, current.cid)) {
    // Set back within the chain this device knows: the head holds all of it. The base stays the
    // head, so the publish on top keeps the publishes the rollback hid in its history.
    noteSetBack(store, components.logger, current.cid, head)
    store.notePointer(current.cid)
    return undefined
  }
  const { rolledBack } = await fetchAndMerge(components, init, current.cid, 'pull')
  if (rolledBack) {
    // What it lacks is in this index: published on top of it (base: the pointer, so no merge again).
    store.pulled(current.cid, '')
    return undefined
  }
  // Our last publish is inside the merged one: what was published stays ours; only the marker moves.
  store.pulled(current.cid, components.index.changeMarker())
  logPulled(store, current.cid)
  return { cid: current.cid, entries, skipped: true, merged: 1 }
}

/** The IPNS key to publish to: the configured one, or with `auto` one made on first use and remembered. */
async function ipnsKeyName (clients: SyncService, store: SyncStore, configured: string, signal?: AbortSignal): Promise<string | undefined> {
  if (configured === '') return undefined
  if (configured !== 'auto') return configured
  const remembered = store.ipnsKey()
  if (remembered !== undefined) return remembered.name
  const key = await clients.names.create({ signal })
  store.setIpnsKey(key.ipnsName, key.ipnsId)
  return key.ipnsName
}

/**
 * The pointer service has no compare-and-swap: GET first; if another device published since our
 * base, fetch its snapshot, merge, and go back to the snapshot step on top of it. Then PUT and
 * read back.
 */
async function pointerStep (components: PublishComponents, init: PublishInit, store: SyncStore, job: JobAt<'pointer'>): Promise<PublishJob> {
  const { signal } = init
  const cid = job.snapshotCid
  if (job.merges >= MAX_MERGES) {
    store.abandonUploaded(job, 'contended')
    throw new PublishContendedError(`other devices published ${MAX_MERGES} times while this one was publishing: this publish starts over after a wait`)
  }
  const current = await currentPointer(components, signal)
  const base = job.baseCid ?? ''
  if (current !== undefined && current.cid !== cid && olderInChain(store.manifestCache, base, current.cid)) {
    // Set back to a publish the base holds all of: nothing to merge; put over it.
    if (store.rollback()?.pointer !== current.cid) noteSetBack(store, components.logger, current.cid, base)
    return await putPointer(components, init, store, job)
  }
  if (current !== undefined && current.cid !== job.baseCid && current.cid !== cid) {
    try {
      await fetchAndMerge(components, init, current.cid, `merge-${job.id}`)
    } catch (err) {
      // `pointer repair`: the unusable snapshot is replaced by ours, which keeps every row we hold.
      if (!(err instanceof PointerUnreadableError && init.repairPointer === true)) throw err
      components.logger.warn({ replaced: current.cid, cid }, 'repairing the pointer: its snapshot could not be used')
      return await putPointer(components, init, store, { ...job, baseCid: current.cid })
    }
    await removeFiles(job.files)
    return store.merged(job, current.cid)
  }
  return await putPointer(components, init, store, job)
}

/** PUT, then read back: another device's PUT in between sends the job round again (counted). */
async function putPointer (components: PublishComponents, init: PublishInit, store: SyncStore, job: JobAt<'pointer'>): Promise<PublishJob> {
  const { signal } = init
  const { config, home } = components.repository
  const cid = job.snapshotCid
  await home.pointers.put({ snapshotCid: cid, engine: ENGINE, namespace: config.namespace, network: config.network, memories: job.entries }, { signal })
  const readBack = await currentPointer(components, signal)
  if (readBack?.cid !== cid) return store.outrun(job)
  // The lists first: killed before the job moves on, the pointer step runs again and finds its own PUT.
  const manifest = parseManifest(job.manifest, cid)
  components.index.segments.recordChains(chainsOf(manifest))
  if (manifest.namespace !== undefined) store.noteBound()
  const own = manifest.devices.find(d => d.deviceId === components.deviceId)
  if (own !== undefined) store.noteOwnSeq(components.deviceId, own.lastSeq)
  return store.pointerPut(job)
}

/**
 * Another device's publish this one took in goes to the mirrors too, so theirs follow the
 * primary's pointer even where that device has no mirror (its manifest, read by the merge, is cached).
 */
function logPulled (store: SyncStore, cid: string): void {
  try {
    const cached = JSON.parse(store.manifestCache.get(cid) ?? 'null') as { kind?: string, manifest?: unknown } | null
    if (cached?.kind !== 'manifest') return
    const manifest = parseManifest(JSON.stringify(cached.manifest), cid)
    store.mirrorLog.logPublish(cid, manifest.devices.flatMap(d => d.segments.map(s => s.cid)), SNAPSHOT_PROFILE.name)
  } catch {
    // A manifest that does not parse here was not taken in either: nothing to copy.
  }
}

async function removeFiles (files: ReadonlyArray<{ readonly path: string }>): Promise<void> {
  for (const file of files) await rm(file.path, { force: true })
}
