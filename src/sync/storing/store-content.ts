import { join } from 'node:path'
import { availableParallelism } from 'node:os'
import { CID } from 'multiformats/cid'
import type { Config, FolderConfig } from '../../config/index.js'
import { cidProfile, FileChangedWhileHashingError, isCidProfileName, type CidProfile, type ObjectBlocks } from '../../content/index.js'
import { ContentStorer, processUploadGate, type ContentRecord, type FileToStore } from '../../custody/index.js'
import { AbortedError, type ContentIntegrityError } from '../../errors.js'
import { writingKey, type SnapshotKey } from '../../snapshot/index.js'
import { createIgnoreMatcher } from '../../watch/index.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import { safeComponents } from '../restore/index.js'
import { ContentIndex, type ContentIndexPass } from './content-index.js'
import { dropPrunedRecords } from './pruned-records.js'
import type { NotStored } from '../content-outcome.js'
import type { SyncComponents } from '../sync-components.js'
import { STATE_NAMES } from '../../config/index.js'
import type { ProgressEvent, ProgressOptions } from '../../util/progress.js'

/** Files read from the index a batch at a time: a long queue is never held whole. */
const BATCH = 500
/** Small files sealed at once for packs (each below 1 MiB: at most 16 MiB of blobs in hand beside the pack). */
const PACKING_AT_ONCE = 16

export interface StoreContentComponents extends SyncComponents {
  readonly hostname: string
}

/** What storing is doing, told as it goes. */
export type StoreContentProgress =
  /** A file is about to be read and stored. */
  | ProgressEvent<'storing:file', { readonly folder: string, readonly path: string, readonly bytes: number }>
  /** Files whose objects are all stored, with their `folder/path` keys. */
  | ProgressEvent<'storing:stored', { readonly files: number, readonly bytes: number, readonly keys: readonly string[] }>
  | ProgressEvent<'storing:failed', { readonly folder: string, readonly path: string, readonly error: Error }>

export interface StoreContentInit extends ProgressOptions<StoreContentProgress> {
  /** Files not to try now (the daemon's failures waiting for their retry), by `folder/path`. */
  readonly skip?: (folder: string, path: string) => boolean
}

export type { NotStored } from '../content-outcome.js'

export interface StoreContentResult {
  readonly storedFiles: number
  readonly storedBytes: number
  /** Files that failed (to retry later), too large, or changed while read (their new row is stored instead). */
  readonly failed: readonly NotStored[]
  readonly tooLarge: readonly NotStored[]
  readonly changed: number
  /** Files left out by `[content] exclude` or `max_file_size`, per folder, as this pass found them. */
  readonly leftOut: ReadonlyMap<string, { files: number, bytes: number }>
  /** What the pass did with the content index; undefined for plain content, which has none. */
  readonly contentIndex?: ContentIndexPass
  /** Records dropped because the store no longer lists their objects: their files stored again. */
  readonly recordsDropped?: number
}

/** The sealing and key content is stored under by this config, as records name it. */
export function contentSealing (config: Config, passphrase?: string): { readonly sealing: ContentRecord['sealing'], readonly key?: SnapshotKey } {
  if (config.content.encryption === 'none') return { sealing: 'none' }
  return { sealing: 'aes-256-gcm/1', key: writingKey(config.stateDir, passphrase) }
}

/** Why a file of a storing folder is never stored (`[content] exclude`, `max_file_size`), or undefined. */
export function contentLeftOut (config: Config): (folder: string, path: string, size: number) => string | undefined {
  const excluded = createIgnoreMatcher(config.content.exclude)
  return (_folder, path, size) => excluded(path)
    ? 'excluded by [content] exclude'
    : size > config.content.maxFileSize ? `larger than [content] max_file_size (${config.content.maxFileSize} bytes)` : undefined
}

/**
 * Stores the content of every file of this device's storing folders that no record holds yet
 * (docs/content-format.md): the index is the queue, so a kill loses nothing but the part being
 * sent. Answers what it stored and what it could not, never throwing for one file's failure.
 */
export async function storeContent (components: StoreContentComponents, init: StoreContentInit = {}): Promise<StoreContentResult> {
  const { config, passphrase, home: clients, store } = components.repository
  const folders = config.folders.filter(f => f.store === true)
  const result = { storedFiles: 0, storedBytes: 0, failed: [] as NotStored[], tooLarge: [] as NotStored[], changed: 0, leftOut: new Map<string, { files: number, bytes: number }>() }
  if (folders.length === 0) return result
  const { sealing, key } = contentSealing(config, passphrase)
  const keyId = key?.keyId ?? ''
  const { index, deviceId } = components
  // Sealed content only: plain content needs no key, so no index object could be trusted.
  const contentIndex = key === undefined
    ? undefined
    : new ContentIndex(components, { keyId, signal: init.signal })
  // A record whose objects a prune deleted is dropped, so its file is stored again.
  const dropped = await dropPrunedRecords({ index, deviceId, objects: clients.objects, store, logger: components.logger }, init.signal)
  // Only when something is to be sent: a pass with nothing to store asks the service nothing.
  if (contentIndex !== undefined && folders.some(f => index.content.unstored(deviceId, f.name, keyId, '', 1).length > 0)) {
    await contentIndex.refresh()
  }
  // Which rows each CID being stored stands for: progress names them once their record lands.
  const taken = new Map<string, string[]>()
  const dealFor = async (object: string): Promise<void> => {
    if (!config.snapshot.deal) return
    await clients.deals.addCid(object, { signal: init.signal })
    index.remote.requestDeal(object, deviceId)
  }
  // Shared with every other storing run of the process: the limits are the process's, not the run's.
  const gate = processUploadGate(config.content.uploadRate, config.content.concurrency)
  const throttle = async (bytes: number, signal?: AbortSignal): Promise<void> => { await gate.bucket.take(bytes, signal) }
  const upload = async (path: string, profile: CidProfile, options: { signal?: AbortSignal, expectedCid?: string, name?: string, blocks?: ObjectBlocks }): Promise<string> =>
    await gate.slots.run(async () => (await clients.objects.put(path, profile, { ...options, throttle })).cid, options.signal)
  const storer = new ContentStorer({
    storeObject: async (path, options) => {
      const cid = await upload(path, SNAPSHOT_PROFILE, options)
      // Logged before its record: a kill between the two stores it again, never leaves a mirror without it.
      store.mirrorLog.logObjects([{ cid, profile: SNAPSHOT_PROFILE.name }])
      // Uploaded after any prune list this device read: no prune that announced it deletes this upload.
      store.pruneList.release(cid)
      await dealFor(cid)
      return cid
    },
    storePlain: async (path, profile, options) => {
      const cid = await upload(path, profile, options)
      store.mirrorLog.logObjects([{ cid, profile: profile.name }])
      store.pruneList.release(cid)
      await dealFor(cid)
      return cid
    }
  }, {
    sealing,
    key: key === undefined ? undefined : { key: key.key, keyId: key.keyId, salt: key.salt },
    spoolDir: join(config.stateDir, STATE_NAMES.contentSpool),
    onStored: (records) => {
      index.content.record(deviceId, components.hostname, records.map(r => ({ ...r, objects: JSON.stringify(r.objects) })))
      for (const r of records) {
        // A file of one part has its part noted too: left, a later store of the same bytes (after a
        // prune deleted them) would take that part as sent and upload nothing.
        if (r.objects.length > 1 || store.contentParts(r.cid, keyId).size > 0) store.forgetContentParts(r.cid, keyId)
        result.storedFiles++
        result.storedBytes += r.size
      }
      init.onProgress?.({ type: 'storing:stored', detail: { files: records.length, bytes: records.reduce((sum, r) => sum + r.size, 0), keys: records.flatMap(r => { const keys = taken.get(r.cid) ?? []; taken.delete(r.cid); return keys }) } })
    },
    storedParts: (file) => store.contentParts(file.cid.toString(), keyId),
    onPartStored: (file, i, object) => { store.contentPartStored(file.cid.toString(), keyId, i, object) },
    // One core for the thread that sends (and the embedded service's), the rest to seal with. Two
    // sealing threads on two cores, tried again once the embedded service added in process: no
    // faster on the full tree (1.21x and 1.00x one thread's time), 30 to 40 MB more peak RSS.
    sealThreads: Math.max(1, Math.min(config.content.concurrency, availableParallelism() - 1))
  })
  try {
    for (const folder of folders) {
      await storeFolder(folder, { components, init, storer, keyId, result, taken, contentIndex })
    }
    await storer.flush({ signal: init.signal })
  } finally {
    await storer.close()
  }
  // What this pass recorded, for other devices: a failure is logged and sent with the next pass.
  await contentIndex?.send()
  const counted = dropped === 0 ? result : { ...result, recordsDropped: dropped }
  return contentIndex === undefined ? counted : { ...counted, contentIndex: contentIndex.pass }
}

interface FolderRun {
  readonly components: StoreContentComponents
  readonly init: StoreContentInit
  readonly storer: ContentStorer
  readonly keyId: string
  readonly result: { storedFiles: number, storedBytes: number, failed: NotStored[], tooLarge: NotStored[], changed: number, leftOut: Map<string, { files: number, bytes: number }> }
  readonly taken: Map<string, string[]>
  readonly contentIndex: ContentIndex | undefined
}

async function storeFolder (folder: FolderConfig, run: FolderRun): Promise<void> {
  const { components, init, keyId, result } = run
  const { config } = components.repository
  const excluded = createIgnoreMatcher(config.content.exclude)
  // Up to `concurrency` files at once, so that many uploads can be in flight (the gate bounds them).
  const running = new Set<Promise<void>>()
  // Files sealed into a pack upload nothing of their own: more go at once, so the sealing thread
  // is never left waiting for this thread to hand it the next one (a first backup of 10,000
  // small files was a ping-pong of two at a time).
  const packing = new Set<Promise<void>>()
  let after = ''
  try {
    for (;;) {
      const batch = components.index.content.unstored(components.deviceId, folder.name, keyId, after, BATCH)
      if (batch.length === 0) break
      // Stored already by another device with this key: recorded here, nothing sent.
      const known = await run.contentIndex?.take(batch.filter(row => !excluded(row.path) && row.size <= config.content.maxFileSize)) ?? new Set()
      for (const row of batch) {
        after = row.path
        if (init.signal?.aborted === true) throw new AbortedError('storing content was stopped')
        if (known.has(row.cid)) continue
        if (excluded(row.path)) { leftOut(result, folder.name, row.size); continue }
        if (init.skip?.(folder.name, row.path) ?? false) continue
        const set = run.storer.packs(row.size) ? packing : running
        const one: Promise<void> = storeRow(folder, row, run).finally(() => set.delete(one))
        set.add(one)
        if (running.size >= config.content.concurrency) await Promise.race(running)
        if (packing.size >= PACKING_AT_ONCE) await Promise.race(packing)
      }
    }
    await Promise.all([...running, ...packing])
  } finally {
    // Every file's store has ended before the run answers, whether it stopped or failed.
    await Promise.allSettled([...running, ...packing])
  }
}

/** Counts a file of a storing folder that is never stored (`[content] exclude`, `max_file_size`). */
function leftOut (result: FolderRun['result'], folder: string, size: number): void {
  const sum = result.leftOut.get(folder) ?? { files: 0, bytes: 0 }
  result.leftOut.set(folder, { files: sum.files + 1, bytes: sum.bytes + size })
}

type UnstoredRow = ReturnType<StoreContentComponents['index']['content']['unstored']>[number]

/** Stores one row's file; a failure is counted in the run's result, never thrown but for a stop. */
async function storeRow (folder: FolderConfig, row: UnstoredRow, run: FolderRun): Promise<void> {
  const { init, storer, result, taken } = run
  const { config } = run.components.repository
  if (row.size > config.content.maxFileSize) {
    leftOut(result, folder.name, row.size)
    result.tooLarge.push({ folder: folder.name, path: row.path, code: 'ERR_CONTENT_TOO_LARGE', reason: `${row.size} bytes, more than [content] max_file_size (${config.content.maxFileSize})` })
    return
  }
  if (!isCidProfileName(row.cidProfile)) return
  let parts: string[]
  try {
    // A row restored from the service (an unencrypted index, or another device's adopted
    // with --as-device) may name `../x`: read, it would send a file outside the folder.
    parts = safeComponents(row.path)
  } catch (err) {
    const error = err as ContentIntegrityError
    result.failed.push({ folder: folder.name, path: row.path, code: error.code, reason: error.message })
    init.onProgress?.({ type: 'storing:failed', detail: { folder: folder.name, path: row.path, error } })
    return
  }
  const file: FileToStore = { path: join(folder.path, ...parts), cid: CID.parse(row.cid), size: row.size, profile: cidProfile(row.cidProfile) }
  taken.set(row.cid, [...(taken.get(row.cid) ?? []), `${folder.name}/${row.path}`])
  init.onProgress?.({ type: 'storing:file', detail: { folder: folder.name, path: row.path, bytes: row.size } })
  try {
    await storer.add(file, { signal: init.signal })
  } catch (err) {
    if (init.signal?.aborted === true) throw err
    // Changed or gone since its row: the watcher writes its new row, which is stored then.
    if (err instanceof FileChangedWhileHashingError || (err as NodeJS.ErrnoException).code === 'ENOENT') { result.changed++; return }
    const error = err as Error & { code?: string }
    result.failed.push({ folder: folder.name, path: row.path, code: typeof error.code === 'string' ? error.code : 'ERR_CONTENT_STORE', reason: error.message })
    init.onProgress?.({ type: 'storing:failed', detail: { folder: folder.name, path: row.path, error } })
    run.components.logger.warn({ folder: folder.name, path: row.path, err: error.message }, 'a file\'s content was not stored; it is tried again later')
  }
}
