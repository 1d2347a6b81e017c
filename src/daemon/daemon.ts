import { join } from 'node:path'
import type { Config } from '../config/index.js'
import { formatListenAddress } from '../config/index.js'
import { explainListenError } from './listen-owner.js'
import { stateDiskFull } from './state-disk.js'
import { buildStatus, sumTotals, uptimeSeconds } from './build-status.js'
import { indexPath, loadOrCreateDeviceId, openIndexRecovering, type Index, type OpenedIndex } from '../index/index.js'
import { createWatcher, type Watcher, type WatchEvent } from '../watch/index.js'
import { VERSION } from '../version.js'
import { ensurePrivateDir } from '../util/private-dir.js'
import { DownloadTooLargeError, NotReadyError, PathNotFoundError } from '../errors.js'
import type { DownloadedFile, SyncEvent, SyncRunner } from '../sync/index.js'
import { MAX_DOWNLOAD_BYTES, type DownloadQuery } from './download-route.js'
import { versionRow } from './version-row.js'
import { EventBus } from './event-bus.js'
import { EventObserver } from './event-observer.js'
import { ensureStatusToken } from './status-token.js'
import { acquireLock, type DaemonLock } from './lock.js'
import type { Logger } from './logger.js'
import { StatusServer } from './status-server.js'
import { FindService, splitPath, type ContentActivity } from '../find/index.js'
import { ServiceLink } from './service-link.js'
import { ChangeNotes } from './change-notes.js'
import { foldCalls, reloadConfig } from './reload.js'
import type { ReloadStatus, StateRecovery, StatusDocument } from './status-document.js'
import { RecentErrors } from './recent-errors.js'
import { makeDirsSync } from '../util/make-dirs.js'

export interface DaemonComponents {
  readonly logger: Logger
}

export interface DaemonInit {
  readonly config: Config
}

/**
 * The long-running process: lock, index, watcher, status endpoint. `start()` returns once the
 * endpoint answers; the scan goes on behind it and shows its progress there.
 */
export class Daemon {
  private config: Config
  private readonly logger: Logger
  private readonly startedAt = new Date()
  private readonly errors = new RecentErrors()
  private readonly recovered: StateRecovery[] = []
  /** Why the index this device last published from is gone, if it is (checked against sync.sqlite once sync loads). */
  private indexLost: string | undefined
  private lock: DaemonLock | undefined
  private index: Index | undefined
  private watcher: Watcher | undefined
  private server: StatusServer | undefined
  /** What the endpoint's /search, /where, /log and /browse answer from. */
  private find: FindService | undefined
  /** The service and the sync runner, once the index is current. */
  private link: ServiceLink | undefined
  private deviceId = ''

  /** What the page's find shows of this device's uploads and failures (its rows only). */
  private contentActivity (): ContentActivity {
    const live = this.link?.runner?.contentActivity()
    return {
      deviceId: this.deviceId, storing: new Set(this.config.folders.filter(f => f.store === true).map(f => f.name)), notStored: live?.notStored,
      uploading: live?.uploading ?? new Set(), failed: live?.failed ?? new Map()
    }
  }
  private scanning: Promise<void> | undefined
  private watching: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  private readonly stopped = new AbortController()
  private fatal: ((error: Error) => void) | undefined
  private readonly fatalError = new Promise<Error>(resolve => { this.fatal = resolve })
  /** What `GET /events` streams. */
  readonly events = new EventBus()
  private readonly observer = new EventObserver(this.events, { watcher: () => this.watcher?.status(), deals: () => this.link?.runner?.reconcileStatus().deals })
  private account: StatusDocument['account'] = null
  /** Every commit's change note, held until the sync runner exists, then handed to it (see ChangeNotes). */
  private readonly changes = new ChangeNotes()

  constructor (components: DaemonComponents, init: DaemonInit) {
    this.logger = components.logger
    this.config = init.config
  }

  /** The daemon's logger: the process logs its last words (a failure nothing handled) here. */
  get log (): Logger {
    return this.logger
  }

  /** Where the status endpoint listens, as `cidsync status` reaches it. */
  get statusAddress (): string | undefined {
    const address = this.server?.address
    return address === undefined ? undefined : formatListenAddress(address)
  }

  /** Starts everything; a failure that is the state dir's disk being full says so ({@link StateDiskFullError}). */
  async start (): Promise<void> {
    try {
      await this.startUp()
    } catch (err) {
      throw stateDiskFull(this.config.stateDir, err) ?? err
    }
  }

  private async startUp (): Promise<void> {
    const { config, logger } = this
    const loose = ensurePrivateDir(config.stateDir)
    if (loose !== undefined) logger.warn({ stateDir: config.stateDir, mode: loose.toString(8) }, 'the state dir was open to others: tightened to 0700')
    this.lock = acquireLock(config.stateDir)
    try {
      this.deviceId = loadOrCreateDeviceId(config.stateDir, (r) => {
        this.recovered.push({ at: new Date().toISOString(), ...r })
        logger.warn(r, 'recovered a state file')
      })
      this.index = this.noteIndexOpened(openIndexRecovering(indexPath(config.stateDir)))
      // Downloads a killed daemon left half-fetched: only this daemon (it holds the lock) makes them.
      await (await import('../sync/index.js')).removeStaleDownloads(config.stateDir)
      this.watcher = createWatcher({ index: this.index, logger, deviceId: this.deviceId }, {
        folders: config.folders,
        profile: config.cidProfile,
        hashWorkers: config.watch.hashWorkers,
        settleMs: config.watch.settleMs,
        onProgress: (event) => { this.watchEvent(event) },
        rescanIntervalMs: config.watch.rescanIntervalSeconds * 1000
      })
      this.server = new StatusServer({
        status: () => this.status(),
        token: ensureStatusToken(config.stateDir),
        events: this.events,
        metricsNeedToken: config.status.metricsToken,
        find: this.find = new FindService(() => this.index, config.stateDir, undefined, async (at) => await this.pastAt(at), () => this.contentActivity()),
        download: async (query, signal) => await this.download(query, signal),
        publishNow: async (options) => await this.readyRunner('publishing').publishNow('request', options),
        verifyNow: async () => await this.readyRunner('the restore drill').verifyNow(),
        reconcileNow: async () => await this.readyRunner('reconciliation').reconcileNow(),
        rescanNow: async () => {
          if (this.watcher === undefined) throw new NotReadyError('not ready: the drift check runs once the folders are watched', 5)
          return await this.watcher.checkDrift()
        }
      })
      const bound = await this.server.listen(config.status.listen).catch(async (err: unknown) => { throw await explainListenError(err, config) })
      this.lock.update({ status: formatListenAddress(bound) })
      this.observer.start()
      this.startScan(this.watcher)
      this.link = new ServiceLink({
        logger, index: this.index, deviceId: this.deviceId, config: () => this.config, stopped: this.stopped.signal,
        noteRecovery: (file, problem, action) => { this.noteRecovery(file, problem, action) },
        onSyncEvent: (event) => { this.noteSyncEvent(event) },
        changes: this.changes
      })
      this.link.connectWhen(this.scanning ?? Promise.resolve(), this.indexLost)
      logger.info({ version: VERSION, device: this.deviceId, stateDir: config.stateDir, status: formatListenAddress(bound), folders: config.folders.length, service: config.service.mode }, 'daemon started')
      this.started = true
      this.warnExcluded(config.folders)
    } catch (err) {
      await this.stop()
      throw err
    }
  }

  private started = false

  /** cidsync's own dirs inside watched folders are left out of them: say so, once per folder set up. */
  private warnExcluded (folders: Config['folders']): void {
    for (const folder of folders) {
      for (const e of folder.exclude ?? []) {
        this.logger.warn({ folder: folder.name, dir: e.dir, path: e.path }, `${e.what} ${e.dir} lies inside the watched folder ${folder.name} (${folder.path}): it is not indexed`)
      }
    }
  }

  /** The sync runner, or why there is none yet: a NotReadyError (503) that says what is awaited. */
  private readyRunner (what: string): SyncRunner {
    const link = this.link
    if (link?.runner !== undefined) return link.runner
    if (link?.error !== undefined) {
      link.wake()
      throw new NotReadyError(`not ready: ${what} waits for the service, which could not be reached: ${link.error}`, 5)
    }
    const waiting = this.watcher?.status()
    const toHash = waiting?.folders.reduce((n, f) => n + Math.max(0, f.toHash - f.hashed), 0) ?? 0
    const reason = waiting?.currentAt === undefined
      ? `the index is not current yet (scanning${toHash > 0 ? `, ${toHash} ${toHash === 1 ? 'file' : 'files'} to hash` : ''})`
      : 'the service is being reached'
    throw new NotReadyError(`not ready: ${what} starts once the index is current and the service is reached; now ${reason}`)
  }

  /** A damaged index was moved aside and made afresh: say so; the scan rebuilds it from the folders. */
  private noteIndexOpened (opened: OpenedIndex): Index {
    this.indexLost = opened.lost
    if (opened.damaged !== undefined) this.noteRecovery(opened.index.path, opened.lost ?? 'damaged', `moved aside to ${opened.damaged.movedTo} (kept) and rebuilt from the folders`)
    return opened.index
  }

  private noteRecovery (file: string, problem: string, action: string): void {
    this.recovered.push({ at: new Date().toISOString(), file, problem, action })
    this.logger.warn({ file, problem, action }, 'recovered a state file')
  }

  private startScan (watcher: Watcher): void {
    const started = Date.now()
    const watching = watcher.start()
    this.scanning = watcher.current()
      .then(() => { this.logger.info({ ms: Date.now() - started, ...sumTotals(this.index?.entries.totals(this.deviceId) ?? []) }, 'index current') })
    watching.catch((err: unknown) => { this.logger.error({ err }, 'the watcher failed to start') })
    this.scanning.catch((err: unknown) => { this.logger.error({ err }, 'the startup scan failed') })
    this.watching = watching
  }

  /**
   * SIGHUP: reads the config again and applies what can change while running (folders, schedules
   * and publish settings, log level). The whole new config is built first: one that no longer
   * validates is refused, logged, and nothing of it applied; keys that need a restart are named in
   * the log. One reload runs at a time: signals that come during one are folded into a single
   * reload after it, which reads the file as it is then. Never rejects: a failure is logged.
   */
  async reload (): Promise<void> {
    await this.reloadFolded()
  }

  private lastReload: ReloadStatus | null = null

  private readonly reloadFolded = foldCalls(async () => {
    await reloadConfig({
      logger: this.logger,
      config: () => this.config,
      stopping: () => this.stopping !== undefined,
      onOutcome: ({ refused, config }) => { this.lastReload = { at: new Date().toISOString(), ok: refused === null, refused, config } },
      apply: async (next) => {
        this.config = next
        this.logger.level = next.logLevel
        await this.link?.runner?.reconfigure(next)
        const folders = await this.watcher?.setFolders(next.folders)
        this.warnExcluded(next.folders.filter(f => folders?.added.includes(f.name) === true))
        return folders
      }
    })
  })

  /**
   * Resolves (never rejects) with the error that keeps the daemon from going on, such as an
   * index that cannot be written any more; the owner then stops it and exits non-zero.
   */
  async whenFatal (): Promise<Error> {
    return await this.fatalError
  }

  /** Resolves once the startup scan is done and its changes are written. */
  async current (): Promise<void> {
    await this.scanning
  }

  /** Resolves once every folder is watched (after {@link current}). */
  async watchingAll (): Promise<void> {
    await this.watching
  }

  /** What the watcher reports: a commit is a change note and an event; an index that cannot be written stops the daemon (a failed write is logged and in status). */
  private watchEvent (event: WatchEvent): void {
    if (event.type === 'index.committed') {
      this.changes.note(event.rows)
      this.observer.rowsChanged(event.rows)
    } else if (event.type === 'index.fatal') this.fatal?.(event.error)
  }

  /** Onto the event stream; after a reconciliation, the account's side of this device's files is counted afresh. */
  private noteSyncEvent (event: SyncEvent): void {
    // What worked again: its earlier errors are resolved (a publish or reconciliation reached the service).
    if (event.type === 'publish.done') for (const topic of ['publish', 'service']) this.errors.resolve(topic)
    if (event.type === 'reconcile.done') for (const topic of ['reconcile', 'service']) this.errors.resolve(topic)
    if (event.type === 'drill' && event.ok) this.errors.resolve('drill')
    this.observer.sync(event)
    if (event.type !== 'reconcile.done' || this.index === undefined) return
    try {
      this.account = { ...this.index.remote.fileStates(this.deviceId), countedAt: new Date().toISOString() }
    } catch (err) {
      this.logger.warn({ err }, 'counting the files on the account\'s side failed')
    }
  }

  /** The index as a past publish saw it, for the dashboard's browser: built once through the service, kept in `past/`. */
  private async pastAt (at: Date): Promise<{ publish: { cid: string, at: string, device: string }, indexPath: string, searchPath: string }> {
    const access = this.link?.historyAccess()
    if (access === undefined) throw new NotReadyError('not ready: browsing a past publish starts once the service is reached')
    const config = this.config
    const [{ pastIndex }, { acceptsUnencrypted }] = await Promise.all([import('../find/index.js'), import('../sync/index.js')])
    const pointer = await access.clients.pointers.current(config.namespace, config.network, { signal: this.stopped.signal })
    const dir = join(config.stateDir, 'snapshots')
    makeDirsSync(dir, 0o700)
    const past = await pastIndex(access.clients, pointer.snapshotCid, at, access.store.manifestCache, {
      stateDir: config.stateDir, dir, label: 'browse', binding: { namespace: config.namespace, network: config.network }, passphrase: process.env.CIDSYNC_SNAPSHOT_PASSPHRASE, acceptUnencrypted: acceptsUnencrypted(config), signal: this.stopped.signal
    })
    return { publish: { cid: past.publish.cid, at: past.publish.at, device: past.publish.device }, indexPath: past.indexPath, searchPath: past.searchPath }
  }

  /**
   * `GET /download`: one file's content through the service, verified, as `get` (or `get --at`)
   * would bring it back; the row chosen as `get` chooses it (this device's, else the newest).
   */
  private async download (query: DownloadQuery, signal: AbortSignal): Promise<DownloadedFile> {
    const access = this.link?.historyAccess()
    const index = this.index
    if (access === undefined || index === undefined) throw new NotReadyError('not ready: downloads start once the service is reached')
    const config = this.config
    const { downloadFile, openPastIndex, selectRows } = await import('../sync/index.js')
    const passphrase = process.env.CIDSYNC_SNAPSHOT_PASSPHRASE
    const past = query.at === undefined ? undefined : await openPastIndex(access, config, query.at, { passphrase, signal: AbortSignal.any([signal, this.stopped.signal]) })
    const from = past?.index ?? index
    try {
      const row = query.cid === undefined
        ? selectRows(from, { paths: [query.path], prefix: false, deviceId: query.device, own: this.deviceId })[0]
        : versionRow(from, query.path, query.cid, config.cidProfile, this.timelineCids(query.path))
      if (row === undefined) throw new PathNotFoundError(`${query.path}: not in the index`)
      if (row.size > MAX_DOWNLOAD_BYTES) throw new DownloadTooLargeError(`${query.path} is ${row.size} bytes, more than the ${MAX_DOWNLOAD_BYTES} the dashboard serves`)
      return await downloadFile(access.clients, from, { config, row, passphrase, signal: AbortSignal.any([signal, this.stopped.signal]) })
    } finally {
      await past?.close()
    }
  }

  /** The CIDs `/log` lists for `folder/path` (kept history and current rows): the versions a `cid=` download may name. */
  private timelineCids (shown: string): Array<string | null> {
    const split = splitPath(shown.replace(/^\/+/, ''))
    if (split === undefined || this.find === undefined) return []
    try {
      return (this.find.log(split.folder, split.path) as { versions: Array<{ cid: string | null }> }).versions.map(v => v.cid)
    } catch {
      return []
    }
  }

  /** Stops everything in order; safe to call twice, and from a failed start. */
  async stop (): Promise<void> {
    this.stopped.abort()
    this.observer.stop()
    this.stopping ??= (async () => {
      await this.server?.close()
      await this.link?.stopSync()
      await this.watcher?.stop()
      await this.link?.close()
      this.find?.close()
      this.index?.close()
      this.lock?.release()
      // A start that failed is said by its error, not as a stop of a daemon that never ran.
      if (this.started) this.logger.info({ uptimeSeconds: uptimeSeconds(this.startedAt) }, 'daemon stopped')
    })()
    await this.stopping
  }

  /**
   * Remembers an error for /status; fed by the logger's error hook. `topic` (see `errorTopic`)
   * says what it is about, so it can leave the list once that works again.
   */
  recordError (message: string, code: string | undefined, detail?: string, topic?: string): void {
    this.errors.record({ at: new Date().toISOString(), message, code: code ?? null, detail: detail ?? null }, topic)
    this.observer.error(message, code ?? null, detail ?? null)
  }


  status (): StatusDocument {
    return buildStatus({
      config: this.config, deviceId: this.deviceId, startedAt: this.startedAt, index: this.index, watcher: this.watcher, link: this.link,
      errors: this.errors, account: this.account, reload: this.lastReload, events: this.events, server: this.server, recovered: this.recovered
    })
  }


}
