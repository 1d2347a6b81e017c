import { existsSync, mkdirSync } from 'node:fs'
import { copyFile, link, readdir, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { Config } from '../config/index.js'
import { IndexDamagedError, SnapshotFormatError, UsageError } from '../errors.js'
import { DEVICE_ID_FILE, indexPath, openIndex } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import { ENGINE, readSnapshot, type SnapshotHeader } from '../snapshot/index.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'
import { failpoint } from '../util/failpoint.js'
import { fsyncPath } from '../util/fsync.js'
import { withSyncStore, type SyncStore } from './sync-store.js'
import { acceptsUnencrypted } from './merge.js'
import { SNAPSHOT_PROFILE } from './publish.js'

export interface RestoreInit {
  readonly config: Config
  readonly namespace: string
  readonly network: string
  /** A snapshot CID to restore instead of the pointer's. */
  readonly cid?: string
  /** Replace an existing index (kept as a backup beside it). */
  readonly force?: boolean
  readonly dryRun?: boolean
  /** Continue as a device the restored index knows, instead of this state dir's own id. */
  readonly asDevice?: string
  readonly passphrase?: string
  /** `--allow-unencrypted`: take a snapshot with no cipher although this device encrypts. */
  readonly allowUnencrypted?: boolean
  readonly signal?: AbortSignal
  /** The command's sync store; absent: one is opened once the restore is installed (a dry run makes none). */
  readonly store?: SyncStore
  readonly onProgress?: (received: number, total: number | undefined) => void
}

export interface RestoreResult {
  readonly cid: string
  readonly dryRun: boolean
  /** Where the previous index went, if there was one. */
  readonly backup: string | undefined
  readonly header: SnapshotHeader | undefined
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
    for (const suffix of ['-wal', '-shm']) if (existsSync(`${target}${suffix}`)) await copyFile(`${target}${suffix}`, `${backup}${suffix}`)
  }
  try {
    await link(target, backup)
  } catch (err) {
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'ENOSYS'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err
    await copyFile(target, backup)
  }
}

/**
 * Installs the index from the pointer (or a given CID): fetch through the gateways, verify the CID,
 * decrypt, decompress, integrity check, then swap it in atomically. The caller holds the state
 * dir's lock, so no daemon writes meanwhile.
 */
export async function restore (clients: ServiceClients, init: RestoreInit): Promise<RestoreResult> {
  const { config } = init
  const started = Date.now()
  let cid = init.cid
  if (cid === undefined) {
    const pointer = await clients.pointers.current(init.namespace, init.network, { signal: init.signal })
    if (pointer.engine !== '' && pointer.engine !== ENGINE) throw new SnapshotFormatError(`the pointer holds a snapshot of engine ${pointer.engine}, not ${ENGINE}: cidsync cannot restore it`)
    cid = pointer.snapshotCid
  }
  const target = indexPath(config.stateDir)
  const exists = existsSync(target)
  if (init.dryRun === true) return { cid, dryRun: true, backup: exists ? `${target}.backup-<time>` : undefined, header: undefined }
  if (exists && init.force !== true) throw new UsageError(`an index already exists at ${target}: add --force to replace it (it is kept as a backup beside it)`)
  mkdirSync(join(config.stateDir, 'snapshots'), { recursive: true, mode: 0o700 })
  const fetched = join(config.stateDir, 'snapshots', `restore-${cid}.snap`)
  const staged = `${target}.restoring`
  try {
    await clients.gateway.fetchVerified(cid, SNAPSHOT_PROFILE, fetched, { signal: init.signal, onProgress: init.onProgress })
    const header = await readSnapshot({
      path: fetched, stateDir: config.stateDir, destination: staged, passphrase: init.passphrase, signal: init.signal,
      acceptUnencrypted: acceptsUnencrypted(config, init.allowUnencrypted)
    })
    if (init.asDevice !== undefined) {
      const restored = openIndex(staged, { readonly: true })
      const known = restored.entries.list({ deviceId: init.asDevice, includeDeleted: true }).length > 0
      restored.close()
      if (!known) throw new UsageError(`the restored index has no device ${init.asDevice}: see \`cidsync ls --all-devices\` for the devices it knows`)
    }
    let backup: string | undefined
    if (exists) {
      backup = `${target}${BACKUP_INFIX}${new Date().toISOString().replace(/[:.]/g, '-')}`
      await keepBackup(target, backup)
      // The old WAL must never be replayed into the new file (it is folded in, or kept with the backup).
      await rm(`${target}-wal`, { force: true })
      await rm(`${target}-shm`, { force: true })
      await fsyncPath(config.stateDir)
    }
    // Killed here, the state dir still holds the old index (and its backup): never no index.
    failpoint('restore:between-renames')
    await rename(staged, target)
    await fsyncPath(config.stateDir)
    if (exists) await pruneBackups(target)
    if (init.asDevice !== undefined) writeFileAtomicSync(join(config.stateDir, DEVICE_ID_FILE), `${init.asDevice}\n`, { mode: 0o600 })
    const installed = cid
    await withSyncStore(init.store, config.stateDir, async (store) => { store.restored(installed, (Date.now() - started) / 1000) })
    return { cid, dryRun: false, backup, header }
  } finally {
    await rm(fetched, { force: true })
    await rm(staged, { force: true })
  }
}
