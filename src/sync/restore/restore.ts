import { existsSync } from 'node:fs'
import { copyFile, link, readdir, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { ContentNotFoundError, IndexDamagedError, SequenceImplausibleError, SnapshotFormatError, UsageError } from '../../errors.js'
import { DEVICE_ID_FILE, indexPath, isDamageError, openIndex, readDeviceId } from '../../index/index.js'
import type { ObjectHome } from '../../store/index.js'
import { READABLE_ENGINES, type Manifest } from '../../snapshot/index.js'
import { writeFileAtomicSync } from '../../util/atomic-write.js'
import type { ProgressOptions } from '../../util/progress.js'
import { failpoint } from '../../util/failpoint.js'
import { fsyncPath } from '../../util/fsync.js'
import type { Repository } from '../repository.js'
import { type SyncStore, type SyncStoreOwner, removeLeftovers, jobFiles } from '../state/index.js'
import { checkOwnPublishIn, nothingAtTime, publishAt, readPublish, type HistoryEntry, type PublishAtTime, type ManifestCache, buildIndex, type DownloadProgress, type FetchInit, fetchV1Snapshot, isGone, scrubRestoredIndex } from '../read/index.js'

export interface RestoreComponents {
  /** The home read from, with this process's passphrase and config. */
  readonly repository: Repository
  /** The command's sync store: read where the state dir has one, written once the restore is installed (a dry run makes none). */
  readonly syncState: SyncStoreOwner
}

/** What a restore tells as it downloads the publish: `restore:download`, bytes so far and in all. */
export type RestoreProgress = DownloadProgress

export interface RestoreInit extends ProgressOptions<RestoreProgress> {
  readonly namespace: string
  readonly network: string
  /** A publish to restore instead of the pointer's: a manifest, or a `/1` snapshot. */
  readonly cid?: string
  /** The newest publish at or before this time, in the history from the pointer (or `cid`). */
  readonly at?: Date
  /** Replace an existing index (kept as a backup beside it). */
  readonly force?: boolean
  readonly dryRun?: boolean
  /** Continue as a device the restored index knows, instead of this state dir's own id. */
  readonly asDevice?: string
  /**
   * The mirror read from instead of the primary. Its pointer may lag, so it is never recorded
   * as this device's last known pointer; the primary's is, and a lagging mirror is refused against it.
   */
  readonly mirror?: string
  /** `--allow-unencrypted`: take a snapshot with no cipher although this device encrypts. */
  readonly allowUnencrypted?: boolean
}

export interface RestoreResult {
  readonly cid: string
  readonly dryRun: boolean
  /** Where the previous index went, if there was one. */
  readonly backup: string | undefined
  /** What was (or with `dryRun`, would be) installed: when, by which device, how many entries. */
  readonly publish: HistoryEntry
  /** With `at`: the publish just after that time, and whether a forget may have removed some between. */
  readonly after?: { readonly next: HistoryEntry | undefined, readonly forgotten: boolean }
}

/** `restore --force` keeps this many backups of the index it replaced (the newest); older ones are removed. */
export const KEPT_BACKUPS = 3
const BACKUP_INFIX = '.backup-'

/** Removes all but the newest {@link KEPT_BACKUPS} backups (their names sort by time); answers what went. */
async function pruneBackups (target: string): Promise<string[]> {
  const prefix = `${basename(target)}${BACKUP_INFIX}`
  const backups = (await readdir(dirname(target))).filter(name => name.startsWith(prefix) && /^[0-9TZ-]+$/.test(name.slice(prefix.length))).sort()
  const removed = backups.slice(0, Math.max(0, backups.length - KEPT_BACKUPS)).map(name => join(dirname(target), name))
  for (const path of removed) {
    for (const suffix of ['', '-wal', '-shm']) await rm(`${path}${suffix}`, { force: true })
  }
  return removed
}

/**
 * Keeps the old index as `backup` without ever leaving the state dir with no index: a second
 * name for the same file (a copy where hard links are not supported); the new index is then
 * renamed over the old name in one step.
 */
async function keepBackup (target: string, backup: string): Promise<void> {
  try {
    // Fold the old index's WAL into it, so the one file kept is the whole of it.
    openIndex(target, { check: false }).close()
  } catch (err) {
    if (!(err instanceof IndexDamagedError)) throw err
    // A damaged index is kept as it is, side files beside it.
    for (const suffix of ['-wal', '-shm', '-journal']) if (existsSync(`${target}${suffix}`)) await copyFile(`${target}${suffix}`, `${backup}${suffix}`)
  }
  try {
    await link(target, backup)
  } catch (err) {
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'ENOSYS'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err
    await copyFile(target, backup)
  }
}

/**
 * Installs the index from the pointer (or a given CID, or the publish the history holds at a
 * time): fetch through the gateways, verify every CID, decrypt, decompress, check, build the index
 * aside, then swap it in atomically. The caller holds the state dir's lock, so no daemon writes
 * meanwhile.
 */
export async function restore (components: RestoreComponents, init: RestoreInit): Promise<RestoreResult> {
  const { repository, syncState } = components
  const { config, home: clients } = repository
  const started = Date.now()
  let cid = init.cid
  if (cid === undefined) {
    const pointer = await clients.pointers.current(init.namespace, init.network, { signal: init.signal })
    if (pointer.engine !== '' && !READABLE_ENGINES.includes(pointer.engine)) throw new SnapshotFormatError(`the pointer holds a snapshot of engine ${pointer.engine}, not one of ${READABLE_ENGINES.join(', ')}: upgrade cidsync`)
    cid = pointer.snapshotCid
  }
  const target = indexPath(config.stateDir)
  const exists = existsSync(target)
  if (exists && init.force !== true && init.dryRun !== true) throw new UsageError(`an index already exists at ${target}: add --force to replace it (it is kept as a backup beside it)`)
  const fetch = repository.readContext('restore', { namespace: init.namespace, network: init.network, allowUnencrypted: init.allowUnencrypted, signal: init.signal, onProgress: init.onProgress })
  // A state dir that never synced gets its sync.sqlite only once a restore is installed.
  const opened = syncState.existing
  if (init.dryRun !== true) {
    // The caller holds the lock: what earlier killed jobs left (a restore killed mid-fetch leaves
    // a segment or a whole index) goes now, not only at the next daemon start; an unfinished
    // publish keeps its files.
    await removeLeftovers(config.stateDir, jobFiles(opened?.current()))
  }
  const kept = new Map<string, string>()
  const cache = opened?.manifestCache ?? memoryCache(kept)
  const chosen = await choose(clients, cid, init.at, cache, fetch).catch((err: unknown) => { throw init.cid === undefined ? err : goneOr(err, cid, 'manifest') })
  // From the pointer at a time: a pointer set back behind this device's own publish is refused, as `get --at` refuses it.
  if (init.cid === undefined && init.at !== undefined) checkOwnPublishIn(chosen.entry, opened?.lastPublished(), init.at)
  checkOwnSequence(chosen.manifest, chosen.entry.cid, init.asDevice ?? readDeviceId(config.stateDir), opened)
  const after = 'next' in chosen ? { after: { next: chosen.next, forgotten: chosen.forgotten } } : {}
  if (init.dryRun === true) return { cid: chosen.entry.cid, dryRun: true, backup: exists ? `${target}.backup-<time>` : undefined, publish: chosen.entry, ...after }
  const staged = `${target}.restoring`
  try {
    await fetchChosen(clients, chosen, staged, fetch, init.cid)
    if (init.asDevice !== undefined) {
      const restored = openIndex(staged, { readonly: true })
      const known = restored.entries.list({ deviceId: init.asDevice, includeDeleted: true }).length > 0
      restored.close()
      if (!known) throw new UsageError(`the restored index has no device ${init.asDevice}: see \`cidsync ls --all-devices\` for the devices it knows`)
    }
    await fsyncPath(staged)
    let backup: string | undefined
    if (exists) {
      backup = `${target}${BACKUP_INFIX}${new Date().toISOString().replace(/[:.]/g, '-')}`
      await keepBackup(target, backup)
      // After keepBackup, which brought the old index to this schema (or found it damaged).
      carryAccountSide(target, staged)
      await fsyncPath(staged)
    }
    // The old index's side files must never be replayed into the new file: folded in or kept with
    // the backup, or left beside an index since removed (a daemon killed, then index.sqlite deleted).
    for (const suffix of ['-wal', '-shm', '-journal']) await rm(`${target}${suffix}`, { force: true })
    await fsyncPath(config.stateDir)
    // Killed here, the state dir still holds the old index (and its backup): never no index.
    failpoint('restore:between-renames')
    await rename(staged, target)
    await fsyncPath(config.stateDir)
    if (exists) await pruneBackups(target)
    if (init.asDevice !== undefined) writeFileAtomicSync(join(config.stateDir, DEVICE_ID_FILE), `${init.asDevice}\n`, { mode: 0o600 })
    const seconds = (Date.now() - started) / 1000
    // A new state dir keeps what it read: the manifests place a mirror's publish against this one.
    for (const [read, json] of kept) syncState.store.manifestCache.put(read, json)
    syncState.store.restored(chosen.entry.cid, seconds, init.cid === undefined && init.mirror === undefined ? cid : undefined)
    // A publish from before a repack names packs a prune deleted since: the next publish checks
    // every record against the listing, and stores again the files whose records name what is gone.
    syncState.store.pruneList.recheckAll()
    return { cid: chosen.entry.cid, dryRun: false, backup, publish: chosen.entry, ...after }
  } finally {
    await rm(staged, { force: true })
  }
}

/**
 * A manifest naming the device this state dir continues as past the furthest sequence it ever
 * published (sync.sqlite) is forged (docs/snapshot-format.md, "Sequences"): installed, the device
 * would count on from there, and at 2^48 never publish again.
 */
function checkOwnSequence (manifest: Manifest | undefined, cid: string, self: string | undefined, store: SyncStore | undefined): void {
  if (manifest === undefined || self === undefined || store === undefined) return
  const published = store.ownSeq(self)
  const there = manifest.devices.find(d => d.deviceId === self)?.lastSeq
  if (published === undefined || there === undefined || there <= published) return
  throw new SequenceImplausibleError(`manifest ${cid} names this device (${self}) at sequence ${there}, past the ${published} it ever published: a forged publish by a holder of the key; not installed. ` +
    'Restore an earlier publish (`cidsync history`, then `--cid`), or let the daemon publish over it')
}

/**
 * The deals this device asked for (and the account's mirrored side) live only in its index, never
 * in a snapshot: a restore over an index keeps them, or `history` would show every deal as none.
 * A damaged old index has nothing to give; the restore goes on without it.
 */
function carryAccountSide (oldIndex: string, staged: string): void {
  const restored = openIndex(staged)
  try {
    restored.remote.carryFrom(oldIndex)
  } catch (err) {
    if (!isDamageError(err) && !(err instanceof IndexDamagedError)) throw err
  } finally {
    restored.close()
  }
}

function memoryCache (kept: Map<string, string>): ManifestCache {
  return { get: (cid) => kept.get(cid), put: (cid, json) => { kept.set(cid, json) } }
}

/** The publish to install: `start` itself, or with `at` the newest in its history made at or before then. */
async function choose (clients: ObjectHome, start: string, at: Date | undefined, cache: ManifestCache, fetch: FetchInit): Promise<{ entry: HistoryEntry, manifest: Manifest | undefined } | PublishAtTime> {
  if (at === undefined) return await readPublish(clients, start, cache, fetch)
  const found = await publishAt(clients, start, at, cache, fetch)
  if (found === undefined) throw await nothingAtTime(clients, start, at, cache, fetch)
  return found
}

/**
 * Builds the chosen publish's index at `staged`. A publish named by `--cid` whose objects the store
 * no longer holds was most likely forgotten and pruned: said so (exit 3), not as damage.
 */
async function fetchChosen (clients: ObjectHome, chosen: { readonly entry: HistoryEntry, readonly manifest?: Manifest }, staged: string, fetch: FetchInit, named: string | undefined): Promise<void> {
  try {
    if (chosen.manifest === undefined) {
      await fetchV1Snapshot(clients, chosen.entry.cid, staged, fetch)
      // A `/1` snapshot is the publisher's whole file (a `/2` base is scrubbed as it is built).
      const whole = openIndex(staged, { check: false })
      try {
        scrubRestoredIndex(whole)
      } finally {
        whole.close()
      }
    } else await buildIndex(clients, chosen.manifest, staged, fetch)
  } catch (err) {
    throw named === undefined ? err : goneOr(err, chosen.entry.cid, 'objects')
  }
}

/**
 * A publish named by `--cid` that the store no longer holds was most likely forgotten and pruned:
 * said so, with what to do (exit 3). Its manifest gone, it may also never have been one of these
 * publishes. Any other failure is `err` itself.
 */
function goneOr (err: unknown, cid: string, gone: 'manifest' | 'objects'): unknown {
  if (!isGone(err)) return err
  const why = (err as Error).message
  return new ContentNotFoundError(gone === 'manifest'
    ? `no publish ${cid} to restore: the service does not hold it (${why}). A forget may have taken it out of the history and a prune deleted it, or it was never one of these publishes: restore one \`cidsync history\` lists`
    : `publish ${cid} cannot be restored: the service no longer holds its objects (${why}). If \`cidsync history\` does not list it, a forget took it out of the history and a prune deleted them: restore a publish it lists. If it does, the service lost them: \`cidsync verify --full\` says what else is missing`,
  { cause: err })
}
