import { readdir, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { CID } from 'multiformats/cid'
import type { Config } from '../config/index.js'
import { CidsyncError, ContentNotFoundError, ExportIncompleteError, ExportWriteError, GatewayFetchError, IntegrityError, NothingAtTimeError, ServiceDataDamagedError } from '../errors.js'
import type { ObjectHome } from '../store/index.js'
import { checkOwnPublishIn, publishAt, readContext, removeDeadExitFiles, SyncStore, hasSyncState, type ManifestCache } from '../sync/index.js'
import { MAX_SEALED_MANIFEST_BYTES, ROOT_SHAPE, segmentLinks, type Manifest } from '../snapshot/index.js'
import { failpoint } from '../util/failpoint.js'
import { fsyncPath } from '../util/fsync.js'
import { CarFile } from './car-file.js'
import { chainObjects, contentObjects, type ChainObject } from './chain-objects.js'
import { exportRoot, type WalkedPublish } from './export-root.js'
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
  /** The CAR's root: the plain root of the publish exported, which links every object the CAR holds. */
  readonly root: string
  /** The publish exported: its manifest's CID (what the pointer held). */
  readonly publish: string
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
 * Writes the chain at the pointer (or at `at`) as a CAR v1 rooted at its plain root: every publish
 * of its history and every segment they name, and with `content` every content object its records
 * name, then the root's own nodes, which link them all (made from what was walked; the header,
 * written first, is given the root's CID at the end). The store hands over each object's blocks,
 * each checked against its CID (ObjectStore's `blocks`): a service's gateway answer is rebuilt
 * into blocks under the object's profile, the embedded store's packs are read in place. Wrong
 * bytes fail the export (exit 4). Memory stays flat: blocks go to the CAR's writes in order as
 * they are checked (12 MiB of write buffers: {@link CarFile}). The CAR is written to a temp
 * file beside FILE, fsynced once and renamed over it: FILE is whole or untouched.
 */
export async function exportCar (clients: ObjectHome, init: ExportInit): Promise<ExportResult> {
  const { config } = init
  const file = resolve(init.file)
  const fetch = readContext(config, { label: 'export', passphrase: init.passphrase, signal: init.signal })
  const store = hasSyncState(config.stateDir) ? new SyncStore(config.stateDir) : undefined
  const cache = store?.manifestCache ?? memoryCache()
  const temp = exportTempPath(file)
  try {
    const pointer = await clients.pointers.current(config.namespace, config.network, { signal: init.signal })
    // The publish exported (its manifest); the CAR's root is the plain root made over its chain.
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
    // Opened before anything is fetched: a FILE that cannot be written fails at once, named. Its
    // header names the plain root once it is made: a CID of the same shape until then.
    // Its writes run on while the next blocks are fetched and hashed: see CarFile for the bounds.
    const car = await CarFile.create(temp, ROOT_SHAPE).catch((err: unknown) => { throw cannotWrite(err) })
    const counts = { publishes: 0, segments: 0, contentObjects: 0, blocks: 0, bytes: 0, objects: 0 }
    let rootManifest: Manifest | undefined
    // What the plain root links: each publish with its segments, newest first, and the content objects' sizes.
    const publishes: WalkedPublish[] = []
    const contentSizes = new Map<string, number>()
    let writeFailure: CidsyncError | undefined
    let carRoot = ''
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
          publishes.push({ cid: object.cid, segments: segmentLinks(object.manifest) })
        } else counts.segments++
        yield object
      }
      if (init.content === true && rootManifest !== undefined) {
        for await (const object of contentObjects(clients, rootManifest, fetch, contentSizes)) {
          counts.contentObjects++
          yield object
        }
      }
    }
    try {
      const requests = async function * (): AsyncGenerator<ChainObject & { maxBytes?: number }> {
        for await (const object of objects()) yield { ...object, maxBytes: maxBytes(object) }
      }
      await clients.objects.blocks(requests(), sink, {
        signal: init.signal,
        onObject: (object, walked) => { written(object, walked.size) },
        failure: (object, err) => named(object, err)
      })
      // The root's own nodes last, the root first: a cut before them sends every object whole before
      // the root that links them all (import), and a reader meets each node before those under it.
      const plain = exportRoot(publishes, init.content === true ? [...contentSizes].map(([cid, size]) => ({ cid: CID.parse(cid), size })) : undefined)
      for (const block of plain.blocks) await sink(block.cid, block.bytes)
      car.nameRoot(plain.root)
      carRoot = plain.root.toString()
      // Written whole and fsynced before the rename.
      await car.close().catch((err: unknown) => { throw cannotWrite(err) })
    } catch (err) {
      await car.abort()
      throw err
    }
    failpoint('export:before-rename')
    await rename(temp, file).catch((err: unknown) => { throw cannotWrite(err) })
    await fsyncPath(dirname(file))
    return { file, root: carRoot, publish: root, at: rootAt ?? '', ...counts, carBytes: (await stat(file)).size }
  } catch (err) {
    await rm(temp, { force: true })
    throw err
  } finally {
    store?.close()
  }
}
