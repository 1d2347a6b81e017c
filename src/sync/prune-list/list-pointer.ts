import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { PRUNE_LIST_NETWORK_SUFFIX, STATE_NAMES } from '../../config/index.js'
import { ContentNotFoundError, IntegrityError, PointerNotFoundError, SnapshotFormatError, SnapshotIntegrityError, SnapshotKeyError, SnapshotTooLargeError, SnapshotUnencryptedError } from '../../errors.js'
import { fileCid } from '../../content/index.js'
import { MAX_SEALED_PRUNE_LIST_BYTES, openPruneList, sealPruneList } from '../../snapshot/index.js'
import { failpoint } from '../../util/failpoint.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import type { Repository } from '../repository.js'

/** The engine a prune list's pointer names: a reader of the index pointer never takes it for one. */
export const PRUNE_LIST_ENGINE = 'cidsync-prune-list/1'

/**
 * The prune list's pointer sits beside the index pointer: same namespace, its own network name.
 * A pointer registry keeps each namespace and network apart, so the index pointer never moves.
 */
export function pruneListNetwork (network: string): string {
  return `${network}${PRUNE_LIST_NETWORK_SUFFIX}`
}

/** A prune list on the service: its CID, and when the service stored it (its clock, ms). */
export interface AnnouncedList {
  readonly cid: string
  readonly storedAt: number | undefined
  /** The list the pointer named before, if any: the prune deletes it once its own is in place. */
  readonly previous: string | undefined
}

/**
 * Uploads the list of content objects a prune is about to delete, and points the prune list's
 * pointer at it. A publish that reads it after its own pointer moved stores those it names again.
 */
export async function announcePruneList (repository: Repository, objects: readonly string[], signal?: AbortSignal): Promise<AnnouncedList> {
  const { config } = repository
  const previous = await listPointer(repository, signal)
  const dir = join(config.stateDir, STATE_NAMES.snapshots)
  makeDirsSync(dir, 0o700)
  const path = join(dir, `prune-list-${process.pid}-${randomBytes(6).toString('hex')}.sealed`)
  try {
    const device = hostname().replace(/[^\x20-\x7e]/g, '?').slice(0, 128) || 'unknown'
    await sealPruneList({ path, device, objects, stateDir: config.stateDir, passphrase: repository.passphrase, signal })
    // Noted before its upload: a run stopped before the pointer names it leaves an object no one
    // would find. A later prune deletes it as it deletes an abandoned publish's.
    const made = (await fileCid(path, SNAPSHOT_PROFILE, { signal })).cid.toString()
    repository.store.abandonedUploads.note([{ cid: made, kind: 'list' }])
    const { cid } = await repository.objects.put(path, SNAPSHOT_PROFILE, { signal })
    // A service that made another CID of it: that one is what it lists.
    if (cid !== made) repository.store.abandonedUploads.note([{ cid, kind: 'list' }])
    repository.store.mirrorLog.logObjects([{ cid, profile: SNAPSHOT_PROFILE.name }])
    const storedAt = (await repository.objects.stat(cid, { signal }))?.storedAt
    failpoint('prune:list-stored')
    await repository.pointers.put({ snapshotCid: cid, engine: PRUNE_LIST_ENGINE, namespace: config.namespace, network: pruneListNetwork(config.network) }, { signal })
    // The pointer names it now: the next prune deletes it as the list before its own.
    repository.store.abandonedUploads.forget([made, cid])
    return { cid, storedAt, previous: previous === cid ? undefined : previous }
  } finally {
    await rm(path, { force: true })
  }
}

/** The CID the prune list's pointer names, or undefined when none was ever set. */
export async function listPointer (repository: Repository, signal?: AbortSignal): Promise<string | undefined> {
  const { config } = repository
  try {
    const pointer = await repository.pointers.current(config.namespace, pruneListNetwork(config.network), { signal })
    return pointer.engine === PRUNE_LIST_ENGINE ? pointer.snapshotCid : undefined
  } catch (err) {
    if (err instanceof PointerNotFoundError) return undefined
    throw err
  }
}

/**
 * Makes the sync store hold the list the service names now; a list read before is not read again.
 * A list that cannot be used (damaged, forged, another key) is logged and held as naming nothing:
 * only a device with the key makes one, so such a list is no prune of this repository's.
 * A failure to ask the service throws: the caller's step runs again.
 */
export async function readPruneList (repository: Repository, logger: Logger, signal?: AbortSignal): Promise<{ readonly changed: boolean }> {
  const state = repository.store.pruneList
  const cid = await listPointer(repository, signal) ?? ''
  if (state.listCid() === cid) return { changed: false }
  if (cid === '') { state.hold('', []); return { changed: false } }
  const { config } = repository
  const dir = join(config.stateDir, STATE_NAMES.snapshots)
  makeDirsSync(dir, 0o700)
  const path = join(dir, `prune-list-${process.pid}-${randomBytes(6).toString('hex')}.fetched`)
  try {
    let objects: readonly string[]
    try {
      await repository.objects.getFile(cid, SNAPSHOT_PROFILE, path, { maxBytes: MAX_SEALED_PRUNE_LIST_BYTES, durable: false, signal })
      objects = (await openPruneList({ path, name: cid, stateDir: config.stateDir, passphrase: repository.passphrase, signal })).objects
    } catch (err) {
      // Larger than any list, gone, or not what its CID says: no list of ours. A newer list of ours throws.
      if (!(err instanceof SnapshotFormatError || err instanceof SnapshotIntegrityError || err instanceof SnapshotKeyError ||
        err instanceof SnapshotUnencryptedError || err instanceof SnapshotTooLargeError || err instanceof IntegrityError || err instanceof ContentNotFoundError)) throw err
      logger.warn({ list: cid, err: err.message }, 'the prune list the service names cannot be used: it is ignored')
      objects = []
    }
    state.hold(cid, objects)
    return { changed: true }
  } finally {
    await rm(path, { force: true })
  }
}
