import { readdir, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { CID } from 'multiformats/cid'
import type { Config } from '../config/index.js'
import { CidsyncError, ContentNotFoundError, ExportIncompleteError, ExportWriteError, GatewayFetchError, IntegrityError, NothingAtTimeError, ServiceDataDamagedError } from '../errors.js'
import type { ServiceClients } from '../remote/index.js'
import { checkOwnPublishIn, publishAt, readContext, removeDeadExitFiles, SyncStore, hasSyncState, type ManifestCache } from '../sync/index.js'
import { MAX_SEALED_MANIFEST_BYTES, type Manifest } from '../snapshot/index.js'
import { failpoint } from '../util/failpoint.js'
import { fsyncPath } from '../util/fsync.js'
import { BlockHasher } from './block-hasher.js'
import { BlockSlots } from './block-slots.js'
import { CarFile } from './car-file.js'
import { chainObjects, contentObjects, type ChainObject } from './chain-objects.js'
import { RUN_BYTES, RUNS_AT_ONCE, walkStoredObjects, type ReadStoredBlock, type ReadStoredRun } from './stored-blocks.js'
import { processAlive } from '../util/process-alive.js'

export interface ExportInit {
  readonly config: Config
  /** Where the CAR goes; nothing is ever left there but a whole one. */
  readonly file: string
  /** The newest publish at or before this time instead of the pointer's. */
  readonly at?: Date
  /** Every stored content object the root's records name, too. */
  readonly content?: boolean
  readonly passphrase?: string
  readonly signal?: AbortSignal
  /**
   * The service's own store, when it runs in this process (the embedded one): blocks are read from
   * it without the HTTP hop, each checked against its CID ({@link walkStoredObjects}). Without it,
   * through the gateways.
   */
  readonly readStored?: ReadStoredBlock
  /** Beside `readStored`: a file's leaves read a run at a time ({@link walkStoredObjects}). */
  readonly readStoredRun?: ReadStoredRun
  /** Told after each object is in the CAR. */
  readonly onObject?: (event: ExportProgress) => void
}

export interface ExportProgress {
  readonly cid: string
  readonly kind: ChainObject['kind']
  readonly objects: number
  readonly bytes: number
}

export interface ExportResult {
  readonly file: string
  /** The CAR's root: the manifest of the publish exported. */
  readonly root: string
  readonly at: string
  readonly publishes: number
  readonly segments: number
  readonly contentObjects: number
  readonly blocks: number
  /** Bytes of the objects (the blocks' leaves: the files as uploaded). */
  readonly bytes: number
  /** Bytes of the CAR file. */
  readonly carBytes: number
}

function memoryCache (): ManifestCache {
  const kept = new Map<string, string>()
  return { get: cid => kept.get(cid), put: (cid, json) => { kept.set(cid, json) } }
}

let exportRuns = 0
const TEMP_SUFFIX = '.cidsync-export'

/**
 * The temp file an export writes: beside FILE (one rename), hidden, one per run (`<pid>-<n>`): two
 * exports to one FILE at once each rename their own CAR (a shared name let one remove the other's
 * file and rename the other's half-written one over FILE, and say it was done).
 */
export function exportTempPath (file: string, run = `${process.pid}-${++exportRuns}`): string {
  return join(dirname(file), `.${basename(file)}.${run}${TEMP_SUFFIX}`)
}

/** The temp files of FILE's exports killed before they ended (their process gone), and of the shared name older versions used. */
async function removeDeadTemps (file: string): Promise<void> {
  const prefix = `.${basename(file)}.`
  for (const name of await readdir(dirname(file)).catch(() => [] as string[])) {
    if (!name.startsWith(prefix) || !name.endsWith(TEMP_SUFFIX)) continue
    const run = name.slice(prefix.length, -TEMP_SUFFIX.length)
    const pid = /^(\d{1,10})-\d{1,10}$/.exec(run)?.[1]
    if (run !== '' && (pid === undefined || processAlive(Number(pid)))) continue
    // Best effort: one this user may not remove (another's, in a sticky /tmp) must not stop the export.
    await rm(join(dirname(file), name), { force: true }).catch(() => {})
  }
}

/**
 * Writes the chain at the pointer (or at `at`) as a CAR v1 rooted at its manifest: every publish
 * of its history and every segment they name, and with `content` every content object its records
 * name. Each object is fetched through the gateways and its blocks rebuilt from its bytes as they
 * stream, under the profile it was uploaded with, so they are the service's blocks, CID for CID
 * (the root compared with the object's CID: a gateway's wrong bytes fail the export, exit 4); or,
 * given `readStored` (the embedded service in this process), read from the store, each block
 * hashed against its CID before it is written.
 * Memory stays flat: blocks handed to the CAR's writes in order as they are checked (12 MiB of
 * write buffers: {@link CarFile}), a few blocks read ahead, and with `readStoredRun` at most
 * {@link RUNS_AT_ONCE} runs of {@link RUN_BYTES} (objects are read ahead across each other, never
 * more than that). The CAR is written to a temp
 * file beside FILE, fsynced once and renamed over it: FILE is whole or untouched.
 */
export async function exportCar (clients: ServiceClients, init: ExportInit): Promise<ExportResult> {
  const { config } = init
  const file = resolve(init.file)
  const fetch = readContext(config, { label: 'export', passphrase: init.passphrase, signal: init.signal })
  const store = hasSyncState(config.stateDir) ? new SyncStore(config.stateDir) : undefined
  const cache = store?.manifestCache ?? memoryCache()
  const temp = exportTempPath(file)
  try {
    const pointer = await clients.pointers.current(config.namespace, config.network, { signal: init.signal })
    let root = pointer.snapshotCid
    let rootAt: string | undefined
    if (init.at !== undefined) {
      const found = await publishAt(clients, root, init.at, cache, fetch)
      if (found === undefined) throw new NothingAtTimeError(`nothing was published at or before ${init.at.toISOString()}: see \`cidsync history\` for the times there are`)
      checkOwnPublishIn(found.entry, store?.lastPublished(), init.at)
      root = found.entry.cid
      rootAt = found.entry.at
    }
    await removeDeadTemps(file)
    await removeDeadExitFiles(config.stateDir)
    const cannotWrite = (err: unknown): CidsyncError => err instanceof CidsyncError ? err : new ExportWriteError(`could not write ${file} (through ${temp}): ${(err as Error).message}; nothing was left under FILE: give a FILE in a directory that exists, is writable and has room`, { cause: err })
    // Opened before anything is fetched: a FILE that cannot be written fails at once, named.
    // Its writes run on while the next blocks are fetched and hashed: see CarFile for the bounds.
    const car = await CarFile.create(temp, CID.parse(root)).catch((err: unknown) => { throw cannotWrite(err) })
    // The store's blocks are hashed on a thread of their own (this one reads, compares and
    // copies), read into a few slots used again and again (see BlockSlots).
    const hasher = init.readStored !== undefined ? new BlockHasher() : undefined
    const slots = init.readStored !== undefined ? new BlockSlots(16) : undefined
    const counts = { publishes: 0, segments: 0, contentObjects: 0, blocks: 0, bytes: 0, objects: 0 }
    let rootManifest: Manifest | undefined
    let writeFailure: CidsyncError | undefined
    const sink = async (cid: CID, bytes: Uint8Array): Promise<void> => {
      // A write that fails (a full disk) is the export's failure, named, not the fetch's.
      await car.put(cid, bytes).catch((err: unknown) => { writeFailure = cannotWrite(err); throw writeFailure })
      counts.blocks++
    }
    const named = (object: ChainObject, err: unknown): unknown => {
      if (writeFailure !== undefined) return writeFailure
      if (err instanceof IntegrityError) return new IntegrityError(`${object.kind} ${object.cid} (${object.about}): ${err.message}; no CAR was written`, { cause: err })
      if (err instanceof ServiceDataDamagedError) return new ServiceDataDamagedError(`${object.kind} ${object.cid} (${object.about}): ${err.message}; no CAR was written`, { cause: err })
      if (err instanceof ContentNotFoundError || err instanceof GatewayFetchError) {
        return new ExportIncompleteError(`could not export ${object.kind} ${object.cid} (${object.about}): ${(err as CidsyncError).message}; no CAR was written. ` +
          (object.kind === 'content' ? 'Run `cidsync verify --content` to see which files it holds, or export without --content' : 'Run `cidsync verify --full`; publish again from a device that holds the files, then export again'), object.cid, { cause: err })
      }
      return err
    }
    const written = (object: ChainObject, size: number): void => {
      counts.bytes += size
      counts.objects++
      init.onObject?.({ cid: object.cid, kind: object.kind, objects: counts.objects, bytes: counts.bytes })
      failpoint('export:object')
    }
    const maxBytes = (object: ChainObject): number | undefined => object.bytes ?? (object.kind === 'manifest' ? MAX_SEALED_MANIFEST_BYTES : undefined)
    /** The chain's objects, root first, then with `content` the content objects its records name. */
    async function * objects (): AsyncGenerator<ChainObject> {
      for await (const object of chainObjects(clients, root, cache, fetch)) {
        if (object.kind === 'manifest' || object.kind === 'snapshot') {
          if (counts.publishes++ === 0) {
            // The pointer set back behind this device's own publish: a backup of an older state
            // would pass for the latest (with --at, checked above).
            if (init.at === undefined) checkOwnPublishIn({ cid: object.cid, at: object.at ?? '' }, store?.lastPublished(), new Date())
            rootAt = object.at
            rootManifest = object.manifest
          }
        } else counts.segments++
        yield object
      }
      if (init.content === true && rootManifest !== undefined) {
        for await (const object of contentObjects(clients, rootManifest, fetch)) {
          counts.contentObjects++
          yield object
        }
      }
    }
    try {
      if (init.readStored !== undefined) {
        // Read ahead across objects: the next object's blocks are read while this one is written.
        const stored = async function * (): AsyncGenerator<{ cid: CID, maxBytes?: number, object: ChainObject }> {
          for await (const object of objects()) yield { cid: CID.parse(object.cid), maxBytes: maxBytes(object), object }
        }
        await walkStoredObjects(init.readStored, stored(), sink, {
          signal: init.signal, hasher, slots, readRun: init.readStoredRun,
          onObject: ({ object }, walked) => { written(object, walked.size) },
          failure: ({ object }, err) => named(object, err)
        })
      } else {
        for await (const object of objects()) {
          const got = await clients.gateway.fetchBlocks(object.cid, object.profile, sink, { signal: init.signal, maxBytes: maxBytes(object) })
            .catch((err: unknown) => { throw named(object, err) })
          written(object, got.size)
        }
      }
      // Written whole and fsynced before the rename.
      await car.close().catch((err: unknown) => { throw cannotWrite(err) })
    } catch (err) {
      await car.abort()
      throw err
    } finally {
      await hasher?.close()
    }
    failpoint('export:before-rename')
    await rename(temp, file).catch((err: unknown) => { throw cannotWrite(err) })
    await fsyncPath(dirname(file))
    return { file, root, at: rootAt ?? '', ...counts, carBytes: (await stat(file)).size }
  } catch (err) {
    await rm(temp, { force: true })
    throw err
  } finally {
    store?.close()
  }
}
