import { mkdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import { fileCid } from '../content/index.js'
import { PointerUnreadableError, PublishContendedError, PublishStateError } from '../errors.js'
import type { Index } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import { ENGINE, writeSnapshot } from '../snapshot/index.js'
import { checkDrop, ownEntries } from './drop-guard.js'
import { JobStore, STATE, type ActiveStep, type PublishJob, type PublishStep } from './job-store.js'
import { changeMarker } from './merge.js'
import { currentPointer, fetchAndMerge } from './pointer-snapshot.js'
import { SNAPSHOT_PROFILE } from './snapshot-profile.js'
import { uploadOnce } from './upload-once.js'
import { failpoint } from '../util/failpoint.js'

export { SNAPSHOT_PROFILE } from './snapshot-profile.js'
/** Other devices publishing between our GET and PUT this many times in a row: the job starts over after a wait. */
export const MAX_MERGES = 3

export interface PublishComponents {
  readonly index: Index
  readonly clients: ServiceClients
  readonly logger: Logger
  readonly deviceId: string
  /** Told each step as the job reaches it, with how many merges it made so far. */
  readonly onStep?: (step: PublishStep, merges: number) => void
}

export interface PublishInit {
  readonly config: Config
  readonly passphrase?: string
  readonly signal?: AbortSignal
  /** Publish even if it drops many of this device's entries (see `drop-guard.ts`). */
  readonly confirmDrop?: boolean
  /** Put this device's index over a pointer whose snapshot cannot be used (`cidsync pointer repair`). */
  readonly repairPointer?: boolean
}

/** What a publish did: the CID the pointer holds now and its entry count. */
export interface Published { readonly cid: string, readonly entries: number, readonly skipped: boolean, readonly merged: number }

type StepRun = (components: PublishComponents, init: PublishInit, store: JobStore, job: PublishJob) => Promise<PublishJob>

/**
 * Publishes the index: snapshot, CID, upload, deal, pointer (merging first if another device
 * published since our base), then the IPNS name. Each step is recorded in `sync.sqlite` before the
 * next begins and each is idempotent, so a run cut short anywhere (kill -9 included) resumes at
 * its step. Nothing changed since the last publish: no new snapshot. A job whose step is unknown,
 * or that other devices kept outrunning, is given up loudly, so the next publish starts over.
 */
export async function publish (components: PublishComponents, init: PublishInit): Promise<Published> {
  const { config } = init
  const store = new JobStore(config.stateDir)
  try {
    const resumed = store.current()
    if (resumed === undefined) {
      const marker = changeMarker(components.index.db)
      const last = store.value(STATE.lastCid)
      if (last !== undefined && store.value(STATE.lastMarker) === marker && init.repairPointer !== true) return await pullOnly(components, init, store, last)
      checkDrop(components.index, components.deviceId, config, store, init.confirmDrop === true)
    }
    let job: PublishJob = resumed ?? store.start(store.value(STATE.base) ?? null)
    for (let steps = 0; ; steps++) {
      init.signal?.throwIfAborted()
      components.logger.debug({ job: job.id, step: job.step }, 'publish step')
      components.onStep?.(job.step, job.merges)
      failpoint(`publish:${job.step}`)
      if (job.step === 'done') break
      const run: StepRun | undefined = (STEPS as Record<string, StepRun | undefined>)[job.step]
      if (run === undefined || steps > MAX_STEPS) {
        const why = run === undefined ? `has the unknown step "${job.step}" (sync.sqlite written by another version of cidsync?)` : `ran ${steps} steps without finishing`
        store.abandon(job.id, why)
        throw new PublishStateError(`publish job ${job.id} ${why}: it was given up, and the next publish starts over`)
      }
      job = await run(components, init, store, job)
    }
    return { cid: job.snapshotCid as string, entries: job.entries ?? 0, skipped: false, merged: job.merges }
  } catch (err) {
    const current = store.current()
    if (current !== undefined) store.failed(current.id, (err as Error).message)
    throw err
  } finally {
    store.close()
  }
}

/** A publish runs each step once, the snapshot and pointer steps again per merge: more is a loop. */
const MAX_STEPS = 6 * (MAX_MERGES + 2)

const STEPS: { readonly [S in ActiveStep]: StepRun } = {
  snapshot: async (components, init, store, job) => {
    const { config } = init
    const dir = join(config.stateDir, 'snapshots')
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const path = join(dir, `publish-${job.id}.snap`)
    const marker = changeMarker(components.index.db)
    const written = await writeSnapshot({ db: components.index.db, stateDir: config.stateDir, path, encryption: config.snapshot.encryption, device: components.deviceId, passphrase: init.passphrase, signal: init.signal })
    const { cid } = await fileCid(path, SNAPSHOT_PROFILE, { signal: init.signal })
    return store.advance(job.id, 'upload', { snapshotPath: path, snapshotCid: cid.toString(), marker, entries: written.entries })
  },
  upload: async (components, init, store, job) => {
    // The client checks that the service computed our CID; an upload already made is reused.
    const how = await uploadOnce(components.clients, job.snapshotPath as string, job.snapshotCid as string, init.signal)
    if (how === 'reused') components.logger.info({ cid: job.snapshotCid }, 'the snapshot was already uploaded (its answer was lost): reused')
    return store.advance(job.id, 'deal')
  },
  deal: async (components, init, store, job) => {
    if (init.config.snapshot.deal) {
      await components.clients.deals.addCid(job.snapshotCid as string, { signal: init.signal })
      components.index.remote.requestDeal(job.snapshotCid as string, components.deviceId)
    }
    return store.advance(job.id, 'pointer')
  },
  pointer: async (components, init, store, job) => await pointerStep(components, init, store, job),
  name: async (components, init, store, job) => {
    const keyName = await ipnsKeyName(components.clients, store, init.config.snapshot.ipnsKey, init.signal)
    if (keyName !== undefined) await components.clients.names.publish(keyName, job.snapshotCid as string, { signal: init.signal })
    store.setValue(STATE.lastCid, job.snapshotCid as string)
    store.setValue(STATE.lastMarker, job.marker as string)
    store.setValue(STATE.lastAt, new Date().toISOString())
    store.setValue(STATE.lastEntries, String(job.entries ?? 0))
    store.setValue(STATE.lastOwnEntries, String(ownEntries(components.index, components.deviceId)))
    await rm(job.snapshotPath as string, { force: true })
    return store.advance(job.id, 'done')
  }
}

/**
 * Nothing changed here since the last publish; if another device published since, take its rows
 * (the pointer's snapshot already holds ours), so this index shows every device's files. Answers
 * what the pointer holds, with its entry count.
 */
async function pullOnly (components: PublishComponents, init: PublishInit, store: JobStore, last: string): Promise<Published> {
  const current = await currentPointer(components, init.config, init.signal)
  const entries = current?.memories ?? Number(store.value(STATE.lastEntries) ?? 0)
  if (current === undefined || current.cid === store.value(STATE.base) || current.cid === last) {
    if (current !== undefined) noteRemotePointer(store, current.cid)
    return { cid: current?.cid ?? last, entries, skipped: true, merged: 0 }
  }
  await fetchAndMerge(components, init, current.cid, 'pull')
  store.setValue(STATE.base, current.cid)
  noteRemotePointer(store, current.cid)
  // Our last publish is inside the merged one: what was published stays ours; only the marker moves.
  store.setValue(STATE.lastMarker, changeMarker(components.index.db))
  return { cid: current.cid, entries, skipped: true, merged: 1 }
}

function noteRemotePointer (store: JobStore, cid: string): void {
  store.setValue(STATE.remotePointer, cid)
  store.setValue(STATE.remotePointerAt, new Date().toISOString())
}
/** The IPNS key to publish to: the configured one, or with `auto` one made on first use and remembered. */
async function ipnsKeyName (clients: ServiceClients, store: JobStore, configured: string, signal?: AbortSignal): Promise<string | undefined> {
  if (configured === '') return undefined
  if (configured !== 'auto') return configured
  const remembered = store.value(STATE.ipnsKey)
  if (remembered !== undefined) return remembered
  const key = await clients.names.create({ signal })
  store.setValue(STATE.ipnsKey, key.ipnsName)
  store.setValue(STATE.ipnsId, key.ipnsId)
  return key.ipnsName
}

/**
 * The pointer service has no compare-and-swap: GET first; if another device published since our
 * base, fetch its snapshot, merge, and go back to the snapshot step on top of it. Then PUT and
 * read back.
 */
async function pointerStep (components: PublishComponents, init: PublishInit, store: JobStore, job: PublishJob): Promise<PublishJob> {
  const { config, signal } = init
  const cid = job.snapshotCid as string
  if (job.merges >= MAX_MERGES) {
    store.abandon(job.id, 'contended')
    throw new PublishContendedError(`other devices published ${MAX_MERGES} times while this one was publishing: this publish starts over after a wait`)
  }
  const current = await currentPointer(components, config, signal)
  if (current !== undefined && current.cid !== job.baseCid && current.cid !== cid) {
    try {
      await fetchAndMerge(components, init, current.cid, `merge-${job.id}`)
    } catch (err) {
      // `pointer repair`: the unusable snapshot is replaced by ours, which keeps every row we hold.
      if (!(err instanceof PointerUnreadableError && init.repairPointer === true)) throw err
      components.logger.warn({ replaced: current.cid, cid }, 'repairing the pointer: its snapshot could not be used')
      return await putPointer(components, init, store, { ...job, baseCid: current.cid })
    }
    await rm(job.snapshotPath as string, { force: true })
    return store.advance(job.id, 'snapshot', { baseCid: current.cid, merges: job.merges + 1 })
  }
  return await putPointer(components, init, store, job)
}

/** PUT, then read back: another device's PUT in between sends the job round again (counted). */
async function putPointer (components: PublishComponents, init: PublishInit, store: JobStore, job: PublishJob): Promise<PublishJob> {
  const { config, signal } = init
  const cid = job.snapshotCid as string
  await components.clients.pointers.put({ snapshotCid: cid, engine: ENGINE, namespace: config.namespace, network: config.network, memories: job.entries ?? 0 }, { signal })
  const readBack = await currentPointer(components, config, signal)
  if (readBack?.cid !== cid) return store.advance(job.id, 'pointer', { merges: job.merges + 1, baseCid: job.baseCid })
  store.setValue(STATE.base, cid)
  noteRemotePointer(store, cid)
  return store.advance(job.id, 'name', { baseCid: cid })
}
