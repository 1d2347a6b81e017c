import { realpathSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { Config } from '../config/index.js'
import { ContentNotFoundError, ExportPointerAheadError, IntegrityError, PointerNotFoundError, UsageError } from '../errors.js'
import { directoryHome, type ObjectHome, type ObjectStore } from '../store/index.js'
import type { Repository } from '../sync/index.js'
import { ENGINE } from '../snapshot/index.js'
import { failpoint } from '../util/failpoint.js'
import type { ProgressEvent, ProgressOptions } from '../util/progress.js'
import { ExportWalk, type ExportedHistory, type ExportProgress, type ExportWalkInit, type WalkedObject } from './export-walk.js'

/** Told after each object is in the directory: written now, or there already. */
export type ExportDirProgressEvent = ProgressEvent<'export:object', ExportDirProgress>

export interface ExportDirInit extends ExportWalkInit, ProgressOptions<ExportDirProgressEvent> {
  /** The directory store to fill: made when missing or empty, a store made before added to. */
  readonly dir: string
}

export interface ExportDirProgress extends ExportProgress {
  /** False: the directory held it already, and it was not written again. */
  readonly written: boolean
}

/** `root`: the plain root a CAR of the same export is rooted at (its nodes are no files: not in the directory). */
export interface ExportDirResult extends ExportedHistory {
  readonly dir: string
  /** Objects written now. */
  readonly written: number
  /** Objects the directory held already. */
  readonly present: number
  /** Bytes of the objects written now. */
  readonly bytesWritten: number
  /** `moved`: the pointer was written; `already`: it named the publish already. */
  readonly pointer: 'moved' | 'already'
}

const LEFT = 'the directory\'s pointer was not moved'
let copies = 0

/**
 * Fills a directory store with the chain at the pointer (or at `at`): the objects a CAR export
 * holds, each fetched verified from the service and put with the store's crash rules (temp file,
 * fsync, rename, fsync the folder). Objects the directory holds already are not written again,
 * so a second export adds only what is new. Then, last, the directory's pointer is moved to the
 * publish: a kill at any point leaves a pointer naming a whole history, or none. A pointer there
 * naming a publish outside the history exported (a later one) is never moved back.
 */
export async function exportDir (repository: Repository, init: ExportDirInit): Promise<ExportDirResult> {
  const clients = repository.home
  const dir = resolve(init.dir)
  refuseMirrorDir(repository.config, dir)
  const home = directoryHome(dir, { create: 'empty' })
  // Before anything is fetched: a path that cannot be a store fails at once, nothing written there.
  await home.objects.opened()
  const walk = await ExportWalk.open(repository, init)
  const signal = init.signal
  let written = 0
  let bytesWritten = 0
  const copy = async (object: WalkedObject): Promise<number> => {
    const temp = join(walk.fetch.dir, `export-${process.pid}-${++copies}.object`)
    try {
      // The service's bytes are checked against the CID as they come, and the put hashes them again.
      await clients.objects.getFile(object.cid, object.profile, temp, { signal, maxBytes: object.maxBytes, durable: false })
        .catch((err: unknown) => { throw walk.failure(object, err, LEFT) })
      return (await home.objects.put(temp, object.profile, { signal, expectedCid: object.cid })).size
    } finally {
      await rm(temp, { force: true })
    }
  }
  for await (const object of walk.objects()) {
    signal?.throwIfAborted()
    const found = await home.objects.stat(object.cid, { signal })
    // A file of another size than the history names is damaged (a cut copy): written again. One of
    // the right size is read back and hashed: bit rot or another writer keeps the size.
    const sized = found !== undefined && (object.bytes === undefined || found.size === object.bytes)
    const there = sized && await holdsWhole(home.objects, object, signal) ? found : undefined
    const size = there?.size ?? await copy(object)
    if (there === undefined) {
      written++
      bytesWritten += size
    }
    // Counted whether or not anyone listens.
    const event = walk.done(object, size)
    init.onProgress?.({ type: 'export:object', detail: { ...event, written: there === undefined } })
  }
  const pointer = await movePointer(home, walk, repository.config, init)
  const history = walk.exported(walk.plainRoot().root.toString())
  return { dir, ...history, written, present: history.objects - written, bytesWritten, pointer }
}

/** Whether the store's file of `object` hashes to its CID; one that does not is written again. */
async function holdsWhole (store: ObjectStore, object: WalkedObject, signal: AbortSignal | undefined): Promise<boolean> {
  try {
    await store.getInto(object.cid, object.profile, async (bytes) => { for await (const chunk of bytes) void chunk }, { signal, maxBytes: object.maxBytes })
    return true
  } catch (err) {
    if (err instanceof IntegrityError || err instanceof ContentNotFoundError) return false
    throw err
  }
}

/** A path with its links resolved, as far as it exists: a store not made yet is compared as written. */
function real (path: string): string {
  try {
    return realpathSync.native(path)
  } catch {
    return resolve(path)
  }
}

/**
 * Refuses a directory a `[[mirrors]]` table names, by any path to it. The daemon writes its
 * pointer; a second writer could set it back between a read and a write.
 */
export function refuseMirrorDir (config: Pick<Config, 'mirrors'>, dir: string): void {
  const target = real(dir)
  for (const mirror of config.mirrors) {
    if (mirror.path === '' || real(mirror.path) !== target) continue
    throw new UsageError(`${dir} is the directory of mirror ${mirror.name}: the daemon copies every publish there, and its pointer has one writer. Export into another directory`)
  }
}

/** The directory's pointer set to the publish exported, once every object is there; never moved back. */
async function movePointer (home: ObjectHome, walk: ExportWalk, config: Config, init: ExportDirInit): Promise<ExportDirResult['pointer']> {
  const { namespace, network } = config
  const current = await home.pointers.current(namespace, network, { signal: init.signal }).then(p => p.snapshotCid, (err: unknown) => {
    if (err instanceof PointerNotFoundError) return undefined
    throw err
  })
  if (current === walk.publish) return 'already'
  if (current !== undefined && !walk.holds(current)) {
    throw new ExportPointerAheadError(`the directory's pointer names ${current}, which is not in the history of ${walk.publish} (the publish of ${walk.at}): a later publish, or another line. ` +
      'It was left as it is, not moved back; the objects were written. Export without --at to bring the directory to the latest publish')
  }
  failpoint('export:before-pointer')
  const head = walk.head
  await home.pointers.put({ snapshotCid: walk.publish, engine: head?.engine ?? ENGINE, namespace, network, ...(head === undefined ? {} : { memories: head.entries }) }, { signal: init.signal })
  return 'moved'
}
