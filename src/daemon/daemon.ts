import type { Config } from '../config/index.js'
import { formatListenAddress } from '../config/index.js'
import { explainListenError } from './listen-owner.js'
import { stateDiskFull } from './state-disk.js'
import { buildStatus, sumTotals, uptimeSeconds } from './build-status.js'
import { indexPath, loadOrCreateDeviceId, openIndexRecovering, type Index, type OpenedIndex } from '../index/index.js'
import { createWatcher, type Watcher, type WatchEvent } from '../watch/index.js'
import { cidsyncVersion } from '../version.js'
import { ensurePrivateDir } from '../util/private-dir.js'
import { NotReadyError } from '../errors.js'
import type { SyncEvent, SyncRunner } from '../sync/index.js'
import { PageReads } from './page-reads.js'
import { foldersInError, readyRunner } from './ready-runner.js'
import { EventBus } from './event-bus.js'
import { EventObserver } from './event-observer.js'
import { ensureStatusToken } from './status-token.js'
import { acquireLock, type DaemonLock } from '../state-lock/index.js'
import type { Logger } from './logger.js'
import { StatusServer } from './status-server.js'
import { FindService, historyChainKey } from '../find/index.js'
import { ServiceLink } from './service-link.js'
import { ChangeNotes } from './change-notes.js'
import { foldCalls, reloadConfig } from './reload.js'
import type { ReloadStatus, StateRecovery, StatusDocument } from './status-document.js'
import { RecentErrors } from './recent-errors.js'
import { wasmBaselineOnly } from '../util/wasm-baseline.js'

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
  /** What the page reads beyond the index: a past publish to browse, a file to download, uploads in flight. */
  private readonly reads = new PageReads({
    link: () => this.link, index: () => this.index, find: () => this.find, config: () => this.config, deviceId: () => this.deviceId, stopped: this.stopped.signal
  })

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
    // Before the service's clients load undici (its HTTP parser is wasm): see wasmBaselineOnly.
    wasmBaselineOnly()
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
        find: this.find = new FindService(() => this.index, config.stateDir, undefined, async (at) => await this.reads.pastAt(at), () => this.reads.contentActivity(), historyChainKey(config.namespace, config.network)),
        download: async (query, signal) => await this.reads.download(query, signal),
        publishNow: async (options) => ({ ...await this.readyRunner('publishing').publishNow('request', options), ...foldersInError(this.watcher?.status()) }),
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
      logger.info({ version: cidsyncVersion(), device: this.deviceId, stateDir: config.stateDir, status: formatListenAddress(bound), folders: config.folders.length, service: config.service.mode }, 'daemon started')
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

  /** The sync runner, or why there is none yet (503). */
  private readyRunner (what: string): SyncRunner {
    return readyRunner(this.link, this.watcher?.status(), what)
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
        // The runner reads the config through the repository, which follows this.config.
        await this.link?.runner?.reconfigure()
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
