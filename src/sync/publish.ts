import { mkdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import { cidProfile, fileCid } from '../content/index.js'
import { CidsyncError, PointerNotFoundError } from '../errors.js'
import type { Index } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import { ENGINE, readSnapshot, writeSnapshot } from '../snapshot/index.js'
import { JobStore, STATE, type PublishJob } from './job-store.js'
import { changeMarker, mergeIndex } from './merge.js'
import { failpoint } from '../util/failpoint.js'

export const SNAPSHOT_PROFILE = cidProfile('kubo-cidv1')
/** Other devices publishing between our GET and PUT this many times in a row is an error, not a loop. */
export const MAX_MERGES = 3

export interface PublishComponents {
  readonly index: Index
  readonly clients: ServiceClients
  readonly logger: Logger
  readonly deviceId: string
}

export interface PublishInit {
  readonly config: Config
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

export interface Published { readonly cid: string, readonly entries: number, readonly skipped: boolean, readonly merged: number }

/**
 * Publishes the index: snapshot, CID, upload, deal, pointer (merging first if another device
 * published since our base), then the IPNS name. Each step is recorded in `sync.sqlite` before the
 * next begins and each is idempotent, so a run cut short anywhere (kill -9 included) resumes at
 * its step. Nothing changed since the last publish: no new snapshot.
 */
export async function publish (components: PublishComponents, init: PublishInit): Promise<Published> {
  const { config } = init
  const store = new JobStore(config.stateDir)
  try {
    let job = store.current()
    if (job === undefined) {
      const marker = changeMarker(components.index.db)
      const last = store.value(STATE.lastCid)
      if (last !== undefined && store.value(STATE.lastMarker) === marker) return await pullOnly(components, init, store, last)
      job = store.start(store.value(STATE.base) ?? null)
    }
    for (;;) {
      init.signal?.throwIfAborted()
      components.logger.debug({ job: job.id, step: job.step }, 'publish step')
      failpoint(`publish:${job.step}`)
      if (job.step === 'done') break
      job = await step(components, init, store, job)
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

async function step (components: PublishComponents, init: PublishInit, store: JobStore, job: PublishJob): Promise<PublishJob> {
  const { config } = init
  const { clients } = components
  switch (job.step) {
    case 'snapshot': {
      const dir = join(config.stateDir, 'snapshots')
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      const path = join(dir, `publish-${job.id}.snap`)
      const marker = changeMarker(components.index.db)
      const written = await writeSnapshot({ db: components.index.db, stateDir: config.stateDir, path, encryption: config.snapshot.encryption, device: components.deviceId, passphrase: init.passphrase, signal: init.signal })
      const { cid } = await fileCid(path, SNAPSHOT_PROFILE, { signal: init.signal })
      return store.advance(job.id, 'upload', { snapshotPath: path, snapshotCid: cid.toString(), marker, entries: written.entries })
    }
    case 'upload':
      // The client checks that the service computed our CID; uploading the same bytes twice is harmless.
      await clients.upload.add(job.snapshotPath as string, SNAPSHOT_PROFILE, { signal: init.signal })
      return store.advance(job.id, 'deal')
    case 'deal':
      if (config.snapshot.deal) {
        await clients.deals.addCid(job.snapshotCid as string, { signal: init.signal })
        components.index.remote.requestDeal(job.snapshotCid as string, components.deviceId)
      }
      return store.advance(job.id, 'pointer')
    case 'pointer':
      return await pointerStep(components, init, store, job)
    case 'name': {
      const keyName = await ipnsKeyName(clients, store, config.snapshot.ipnsKey, init.signal)
      if (keyName !== undefined) await clients.names.publish(keyName, job.snapshotCid as string, { signal: init.signal })
      store.setValue(STATE.lastCid, job.snapshotCid as string)
      store.setValue(STATE.lastMarker, job.marker as string)
      store.setValue(STATE.lastAt, new Date().toISOString())
      store.setValue(STATE.lastEntries, String(job.entries ?? 0))
      await rm(job.snapshotPath as string, { force: true })
      return store.advance(job.id, 'done')
    }
    default:
      return job
  }
}

/**
 * Nothing changed here since the last publish; if another device published since, take its rows
 * (the pointer's snapshot already holds ours), so this index shows every device's files.
 */
async function pullOnly (components: PublishComponents, init: PublishInit, store: JobStore, last: string): Promise<Published> {
  const current = await currentPointer(components, init.config, init.signal)
  if (current === undefined || current === store.value(STATE.base) || current === last) return { cid: last, entries: 0, skipped: true, merged: 0 }
  await fetchAndMerge(components, init, current, 'pull')
  store.setValue(STATE.base, current)
  store.setValue(STATE.remotePointer, current)
  store.setValue(STATE.lastCid, current)
  store.setValue(STATE.lastMarker, changeMarker(components.index.db))
  return { cid: current, entries: 0, skipped: true, merged: 1 }
}

/** Fetches a snapshot through the gateways, opens it, and merges its other devices' rows into the index. */
async function fetchAndMerge (components: PublishComponents, init: PublishInit, cid: string, label: string): Promise<void> {
  const dir = join(init.config.stateDir, 'snapshots')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const fetched = join(dir, `${label}-${process.pid}.snap`)
  const database = join(dir, `${label}-${process.pid}.sqlite`)
  try {
    await components.clients.gateway.fetchVerified(cid, SNAPSHOT_PROFILE, fetched, { signal: init.signal })
    await readSnapshot({ path: fetched, stateDir: init.config.stateDir, destination: database, passphrase: init.passphrase, signal: init.signal })
    const merged = mergeIndex(components.index.db, database, components.deviceId)
    components.logger.info({ from: cid, devices: merged.devicesTaken.length }, 'merged another device\'s snapshot')
  } finally {
    await rm(fetched, { force: true })
    await rm(database, { force: true })
  }
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

async function currentPointer (components: PublishComponents, config: Config, signal?: AbortSignal): Promise<string | undefined> {
  try {
    const pointer = await components.clients.pointers.current(config.namespace, config.network, { signal })
    if (pointer.engine !== '' && pointer.engine !== ENGINE) {
      throw new CidsyncError(`the pointer for ${config.namespace} on ${config.network} holds a snapshot of engine ${pointer.engine}: cidsync will not overwrite it; use another namespace`)
    }
    return pointer.snapshotCid
  } catch (err) {
    if (err instanceof PointerNotFoundError) return undefined
    throw err
  }
}

/**
 * The pointer service has no compare-and-swap: GET first; if another device published since our
 * base, fetch its snapshot, merge, and go back to the snapshot step on top of it. Then PUT and
 * read back.
 */
async function pointerStep (components: PublishComponents, init: PublishInit, store: JobStore, job: PublishJob): Promise<PublishJob> {
  const { config, signal } = init
  const cid = job.snapshotCid as string
  if (job.merges >= MAX_MERGES) throw new CidsyncError(`other devices published ${MAX_MERGES} times while this one was publishing: try again`)
  const current = await currentPointer(components, config, signal)
  if (current !== undefined && current !== job.baseCid && current !== cid) {
    await fetchAndMerge(components, init, current, `merge-${job.id}`)
    await rm(job.snapshotPath as string, { force: true })
    return store.advance(job.id, 'snapshot', { baseCid: current, merges: job.merges + 1 })
  }
  await components.clients.pointers.put({ snapshotCid: cid, engine: ENGINE, namespace: config.namespace, network: config.network, memories: job.entries ?? 0 }, { signal })
  const readBack = await currentPointer(components, config, signal)
  // Another device PUT between ours and the read: go round again (merge, snapshot, PUT), counted.
  if (readBack !== cid) return store.advance(job.id, 'pointer', { merges: job.merges + 1 })
  store.setValue(STATE.base, cid)
  store.setValue(STATE.remotePointer, cid)
  store.setValue(STATE.remotePointerAt, new Date().toISOString())
  return store.advance(job.id, 'name', { baseCid: cid })
}
