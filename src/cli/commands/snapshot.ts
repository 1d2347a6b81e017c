import { hostname } from 'node:os'
import type { Command } from 'commander'
import { loadConfig, type Config } from '../../config/index.js'
import { ContentNotStoredError, FoldersNotIndexedError, LockHeldError, UsageError } from '../../errors.js'
import { marksProblem } from '../../snapshot/index.js'
import { countOf, formatBytes, printJson } from '../format.js'
import type { NotStored, StoreContentProgress } from '../../sync/index.js'
import type { WatchEvent, WatcherStatus } from '../../watch/index.js'
import { action } from '../run.js'
import { safeLines, safeText } from '../safe-text.js'
import { makeDirsSync } from '../../util/make-dirs.js'

interface Published {
  cid: string, entries: number, skipped: boolean, merged: number
  /** The labels asked for with --keep, which the publish carries. */
  marks?: readonly string[]
  /** Files whose content a prune at the same time was deleting: stored again, for the next publish. */
  storedAgain?: number
  /** What was stored of files' content first (folders with `store = true`). */
  content?: { storedFiles: number, storedBytes: number, notStored: ReadonlyArray<{ folder: string, path: string, reason: string, code: string }>, error?: string }
  /** Published on its own (no daemon): folders the catch-up could not read, with why. */
  foldersInError?: ReadonlyArray<{ folder: string, error: string }>
  /** Published on its own: the mirrors that get it only once a daemon runs (only a daemon copies). */
  mirrorsWaiting?: readonly string[]
}

/** What a caller may ask of one publish (see sync's `PublishOptions`). */
export interface PublishRequest { readonly confirmDrop?: boolean, readonly repairPointer?: boolean, readonly marks?: readonly string[] }

/** No daemon: take the lock, bring the index up to date with the folders, publish, let go. */
async function publishStandalone (config: Config, request: PublishRequest): Promise<Published> {
  const { acquireLock, createLogger } = await import('../../daemon/index.js')
  makeDirsSync(config.stateDir, 0o700)
  const lock = acquireLock(config.stateDir)
  const { indexPath, loadOrCreateDeviceId, openIndexRecovering } = await import('../../index/index.js')
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
  // As the daemon does at start: a damaged index moved aside, and one lost since the last publish merges the pointer first.
  const opened = openIndexRecovering(indexPath(config.stateDir))
  const index = opened.index
  try {
    if (opened.damaged !== undefined) logger.warn({ file: index.path, problem: opened.lost, action: `moved aside to ${opened.damaged.movedTo} (kept) and rebuilt from the folders` }, 'recovered a state file')
    const { prepareSyncState, publish, Repository } = await import('../../sync/index.js')
    // sync.sqlite: checked, then open for the rest of this run.
    const { recovered, store } = await prepareSyncState(config.stateDir, { indexLost: opened.lost })
    try {
      for (const r of recovered) logger.warn(r, 'recovered a state file')
      const deviceId = loadOrCreateDeviceId(config.stateDir, (r) => { logger.warn(r, 'recovered a state file') })
      const { createWatcher } = await import('../../watch/index.js')
      const { connectService } = await import('../../connect/index.js')
      // Owned below: awaited once indexing is done, or closed if indexing fails.
      let early: ReturnType<typeof connectService> | undefined
      const connectEarly = (): void => {
        early ??= connectService(config, process.env, { storing: true })
        early.catch(() => {})
      }
      // A remote service is reached while the folders are indexed. So is the embedded one's thread,
      // once the changes found call for one (serviceThread); else it starts on this thread after.
      if (config.service.mode !== 'embedded') connectEarly()
      const onProgress = (event: WatchEvent): void => { if (event.type === 'index.committed' && serviceThread(watcher.hashedBytes)) connectEarly() }
      const watcher = createWatcher({ index, logger, deviceId }, { folders: config.folders, profile: config.cidProfile, hashWorkers: config.watch.hashWorkers, command: true, settleMs: config.watch.settleMs, onProgress })
      let unindexed: NotStored[]
      let foldersInError: Array<{ folder: string, error: string }>
      let hashed: number
      try {
        try {
          await watcher.catchUp()
          unindexed = notIndexed(watcher.status(), config)
          foldersInError = watcher.status().folders.filter(f => f.state === 'error').map(f => ({ folder: f.name, error: f.error ?? 'in error' }))
          hashed = watcher.hashedBytes
        } finally {
          await watcher.stop()
        }
      } catch (err) {
        await early?.then(async c => { await c.close() }, () => {})
        throw err
      }
      const connection = await (early ?? connectService(config, process.env, { storing: serviceThread(hashed) }))
      try {
        // The passphrase read once, by the command's repository; the store is the command's.
        const repository = new Repository(config, connection.clients, { store })
        // Content first, so the publish printed restores every file it lists as stored.
        const { storeContent } = await import('../../sync/index.js')
        let stored = await storeContent({ index, repository, logger, deviceId, hostname: hostname() }, { onProgress: storeProgress() })
        let published = await publish({ index, repository, logger, deviceId }, request)
        // A prune at the same time was deleting content this publish names: stored again, published anew.
        for (let round = 0; (published.storedAgain ?? 0) > 0 && round < STORE_AGAIN_ROUNDS; round++) {
          stored = await storeContent({ index, repository, logger, deviceId, hostname: hostname() }, { onProgress: storeProgress() })
          published = await publish({ index, repository, logger, deviceId }, { ...request, marks: undefined })
        }
        const notStored = [...unindexed, ...stored.failed, ...stored.tooLarge]
        const withFolders = { ...published, ...(foldersInError.length > 0 ? { foldersInError } : {}), ...(config.mirrors.length > 0 ? { mirrorsWaiting: config.mirrors.map(m => m.name) } : {}) }
        return config.folders.some(f => f.store === true) ? { ...withFolders, content: { storedFiles: stored.storedFiles, storedBytes: stored.storedBytes, notStored } } : withFolders
      } finally {
        await connection.close()
      }
    } finally {
      store.close()
    }
  } finally {
    index.close()
    lock.release()
  }
}

/**
 * New or changed bytes from which the embedded service runs in a thread of its own. Below, the
 * thread's start costs more than the blocks it would take off this thread (docs/benchmarks.md,
 * "Small snapshots"). A backlog an earlier run left unstored is not counted: it is stored either way.
 */
const SERVICE_THREAD_BYTES = 64 * 1024 * 1024

const serviceThread = (hashedBytes: number): boolean => hashedBytes >= SERVICE_THREAD_BYTES

/** Publishes made again when a prune keeps deleting what the last one named: then the next run goes on. */
const STORE_AGAIN_ROUNDS = 3

/**
 * Files of storing folders the scan skipped (a name that is not UTF-8, a file that cannot be
 * read): no row, so no content stored, and no publish can bring them back. A symbolic link not
 * followed is the folder's setting, and a special file has no content: neither is a loss.
 */
function notIndexed (status: WatcherStatus, config: Config): NotStored[] {
  const storing = new Set(config.folders.filter(f => f.store === true).map(f => f.name))
  return status.folders.filter(f => storing.has(f.name)).flatMap(f => f.skippedFiles
    // A FIFO, socket or device has no bytes to lose: listed in status, not a failure of the publish.
    .filter(s => s.reason !== 'ERR_SYMLINK_NOT_FOLLOWED' && s.reason !== 'ERR_SPECIAL_FILE')
    .map(s => ({ folder: f.name, path: `${s.path}${s.kind === 'dir' ? '/' : ''}`, code: s.reason, reason: `not indexed, so not stored: ${s.advice}` })))
}

/** On a terminal: files and bytes stored so far. */
function storeProgress (): ((event: StoreContentProgress) => void) | undefined {
  if (process.stderr.isTTY !== true) return undefined
  let files = 0
  let bytes = 0
  return (event) => {
    if (event.type !== 'storing:stored') return
    files += event.detail.files
    bytes += event.detail.bytes
    process.stderr.write(`\rstoring content: ${countOf(files, 'file', 'files')}, ${formatBytes(bytes)}   `)
  }
}

/** Publishes through the running daemon, or on its own when none runs. */
export async function publishOnce (config: Config, request: PublishRequest = {}): Promise<Published> {
  try {
    return await publishStandalone(config, request)
  } catch (err) {
    if (!(err instanceof LockHeldError)) throw err
    const { postToDaemon } = await import('../status-client.js')
    const query = [request.confirmDrop === true ? 'confirmDrop=1' : '', request.repairPointer === true ? 'repairPointer=1' : '', ...(request.marks ?? []).map(mark => `keep=${encodeURIComponent(mark)}`)].filter(q => q !== '').join('&')
    return JSON.parse(await postToDaemon(config, `/snapshot${query === '' ? '' : `?${query}`}`)) as Published
  }
}

const SNAPSHOT_HELP = `
What it does:
With a daemon running, it asks the daemon to publish (POST /snapshot).
A daemon that is not ready yet is waited for, up to 2 minutes, saying so.
With no daemon, it catches up with the folders, then publishes on its own.
Mirrors get that publish from the next daemon: only a daemon copies to them.
Either way, it stores what is pending in folders with store = true first.
A file it could not store is named, and the exit is 1.
It prints the CID the pointer holds and its entry count.

Held publishes:
A publish that would drop many of this device's entries at once is held.
[snapshot] max_drop_entries and max_drop_fraction say how many is too many.
--confirm-drop publishes it anyway, once you know the files are really gone.
On its own, a folder it cannot read (missing, unmounted) is published as last indexed.
That folder is named, and the exit is 1 (ERR_FOLDERS_NOT_INDEXED).

Labels:
--keep "before the move" labels this publish; \`cidsync forget\` never forgets it.
A labelled publish is made even when nothing changed since the last one.
\`cidsync history\` shows each publish's labels. Through a daemon, --keep needs its token.`

function collectLabel (label: string, labels: string[]): string[] {
  return [...labels, label]
}

/** ", kept as "before the move"": what `history` shows of the publish's labels too. */
function labelled (marks: readonly string[] | undefined): string {
  return marks === undefined || marks.length === 0 ? '' : `, kept as ${marks.map(m => safeText(JSON.stringify(m))).join(', ')}`
}

export function registerSnapshot (program: Command): void {
  program.command('snapshot')
    .description('publish now and print the snapshot CID: through the running daemon, or on its own after catching up with the folders')
    .addHelpText('after', SNAPSHOT_HELP)
    .option('--config <path>', 'config file')
    .option('--json', 'print JSON')
    .option('--confirm-drop', 'publish even though it drops many of this device\'s entries at once (status says when a publish is held for that)')
    .option('--keep <label>', 'label this publish so that `cidsync forget` always keeps it; made even when nothing changed (repeat for several labels)', collectLabel, [])
    .action(action(async (options: { config?: string, json?: boolean, confirmDrop?: boolean, keep: string[] }) => {
      const refused = options.keep.length > 0 ? marksProblem(options.keep) : undefined
      if (refused !== undefined) throw new UsageError(`--keep: ${refused}`)
      const config = loadConfig({ configPath: options.config })
      const published = await publishOnce(config, { confirmDrop: options.confirmDrop === true, marks: options.keep })
      if (options.json === true) printJson(published)
      else process.stdout.write(`${published.cid}  ${countOf(published.entries, 'entry', 'entries')}${published.skipped ? ' (unchanged here since the last snapshot)' : ''}${published.merged > 0 ? `, merged ${countOf(published.merged, 'other snapshot', 'other snapshots')}` : ''}${labelled(published.marks)}\n`)
      // A folder that could not be read is published as the index last held it: said, and not exit 0.
      const unread = published.foldersInError ?? []
      if (options.json !== true) for (const f of unread) process.stderr.write(`cidsync: folder ${safeText(f.folder)} not indexed: ${safeLines(f.error)}\n`)
      // Published on its own: a USB disk unplugged now would not hold this publish.
      const waiting = published.mirrorsWaiting ?? []
      if (options.json !== true && waiting.length > 0) process.stderr.write(`cidsync: ${waiting.length === 1 ? 'mirror' : 'mirrors'} ${waiting.join(', ')} ${waiting.length === 1 ? 'gets' : 'get'} this publish from the next \`cidsync daemon\`: only a daemon copies to mirrors\n`)
      const foldersError = unread.length === 0
        ? undefined
        : new FoldersNotIndexedError(`published, but ${countOf(unread.length, 'folder', 'folders')} could not be read (${unread.map(f => safeText(f.folder)).join(', ')}, named above): the publish holds ${unread.length === 1 ? 'its' : 'their'} files as the index last saw them; mount or create ${unread.length === 1 ? 'it' : 'them'} (or remove ${unread.length === 1 ? 'it' : 'them'} from the config), then run \`cidsync snapshot\` again`)
      const again = published.storedAgain ?? 0
      const pruneError = again === 0
        ? undefined
        : new ContentNotStoredError(`a prune is deleting content this publish names: ${countOf(again, 'file is', 'files are')} stored again and published by the next run; run \`cidsync snapshot\` again once the prune is done`)
      const content = published.content
      if (content === undefined) {
        if (foldersError !== undefined) throw foldersError
        if (pruneError !== undefined) throw pruneError
        return
      }
      if (options.json !== true) {
        if (process.stderr.isTTY === true) process.stderr.write('\n')
        process.stderr.write(content.storedFiles === 0 && content.notStored.length === 0 && content.error === undefined
          ? 'content: nothing new to store (every file of a storing folder already is)\n'
          : `stored ${countOf(content.storedFiles, 'file', 'files')} (${formatBytes(content.storedBytes)}) of content first\n`)
        for (const n of content.notStored) process.stderr.write(`cidsync: not stored: ${safeText(`${n.folder}/${n.path}`)}: ${safeLines(n.reason)} [${safeText(n.code)}]\n`)
      }
      if (content.error !== undefined) throw new ContentNotStoredError(`storing content before the publish failed: ${content.error}; the daemon tries again (\`cidsync status\` says when), or run \`cidsync snapshot\` again`)
      if (foldersError !== undefined) throw foldersError
      if (pruneError !== undefined) throw pruneError
      if (content.notStored.length > 0) throw new ContentNotStoredError(`${countOf(content.notStored.length, 'file\'s content was', 'files\' content was')} not stored, so this publish cannot bring ${content.notStored.length === 1 ? 'it' : 'them'} back (named above): the daemon tries again, or run \`cidsync snapshot\` again`)
    }))
}
