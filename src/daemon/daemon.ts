import { hostname } from 'node:os'
import type { Config } from '../config/index.js'
import { formatListenAddress, loadConfig } from '../config/index.js'
import { indexPath, loadOrCreateDeviceId, openIndexRecovering, type FolderTotals, type Index, type OpenedIndex } from '../index/index.js'
import { createWatcher, type Watcher } from '../watch/index.js'
import { VERSION } from '../version.js'
import type { ServiceConnection } from '../connect/index.js'
import { releaseMemory } from '../util/release-memory.js'
import { ensurePrivateDir } from '../util/private-dir.js'
import { jwtExpiry } from '../util/jwt.js'
import { NotReadyError } from '../errors.js'
import type { SyncEvent, SyncRunner, SyncStore } from '../sync/index.js'
import { EventBus } from './event-bus.js'
import { EventObserver } from './event-observer.js'
import { ensureStatusToken } from './status-token.js'
import { acquireLock, type DaemonLock } from './lock.js'
import type { Logger } from './logger.js'
import { StatusServer } from './status-server.js'
import { planReload, type ReloadPlan } from './reload-plan.js'
import type { RecentError, StateRecovery, StatusDocument } from './status-document.js'

export const DEFAULT_RECENT_ERRORS = 20
/** The longest wait between attempts to reach a service that could not be reached. */
const MAX_CONNECT_RETRY_MS = 300_000
/** Warn this long before the session token expires. */
const TOKEN_WARNING_MS = 86_400_000

/** A credential getter may throw (a file with loose permissions): status and checks treat that as absent. */
function safely (read: (() => string | undefined) | undefined): string | undefined {
  try {
    return read?.()
  } catch {
    return undefined
  }
}

function sumTotals (all: readonly FolderTotals[]): { files: number, bytes: number } {
  return { files: all.reduce((n, t) => n + t.files, 0), bytes: all.reduce((n, t) => n + t.bytes, 0) }
}

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
  private readonly recentErrors: RecentError[] = []
  private readonly recovered: StateRecovery[] = []
  private leftoversRemoved = { files: 0, bytes: 0 }
  private syncStateError: string | null = null
  /** Why the index this device last published from is gone, if it is (checked against sync.sqlite once sync loads). */
  private indexLost: string | undefined
  private lock: DaemonLock | undefined
  private index: Index | undefined
  private watcher: Watcher | undefined
  private server: StatusServer | undefined
  private connection: ServiceConnection | undefined
  private serviceError: string | undefined
  private runner: SyncRunner | undefined
  /** sync.sqlite, opened once by the start-up check and shared by everything that syncs. */
  private syncStore: SyncStore | undefined
  private deviceId = ''
  private scanning: Promise<void> | undefined
  private watching: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  private readonly stopped = new AbortController()
  /** Cuts the wait before the next attempt to reach the service short (a user asked for it). */
  private wakeConnect: (() => void) | undefined
  private fatal: ((error: Error) => void) | undefined
  private readonly fatalError = new Promise<Error>(resolve => { this.fatal = resolve })
  private reloading: Promise<void> | undefined
  private reloadQueued: Promise<void> | undefined
  /** What `GET /events` streams. */
  readonly events = new EventBus()
  private readonly observer = new EventObserver(this.events, { watcher: () => this.watcher?.status(), deals: () => this.runner?.reconcileStatus().deals })
  private account: StatusDocument['account'] = null

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

  async start (): Promise<void> {
    const { config, logger } = this
    const loose = ensurePrivateDir(config.stateDir)
    if (loose !== undefined) logger.warn({ stateDir: config.stateDir, mode: loose.toString(8) }, 'the state dir was open to others: tightened to 0700')
    this.lock = acquireLock(config.stateDir)
    try {
      this.deviceId = loadOrCreateDeviceId(config.stateDir)
      this.index = this.noteIndexOpened(openIndexRecovering(indexPath(config.stateDir)))
      this.watcher = createWatcher({ index: this.index, logger, deviceId: this.deviceId }, {
        folders: config.folders,
        profile: config.cidProfile,
        hashWorkers: config.watch.hashWorkers,
        settleMs: config.watch.settleMs,
        onRowsChanged: (rows) => { this.runner?.noteChange(); this.observer.rowsChanged(rows) },
        onFatal: (error) => this.fatal?.(error),
        rescanIntervalMs: config.watch.rescanIntervalSeconds * 1000
      })
      this.server = new StatusServer({
        status: () => this.status(),
        token: ensureStatusToken(config.stateDir),
        events: this.events,
        metricsNeedToken: config.status.metricsToken,
        publishNow: async (options) => await this.readyRunner('publishing').publishNow('request', options),
        reconcileNow: async () => await this.readyRunner('reconciliation').reconcileNow(),
        rescanNow: async () => {
          if (this.watcher === undefined) throw new Error('not ready: the drift check runs once the folders are watched')
          return await this.watcher.checkDrift()
        }
      })
      const bound = await this.server.listen(config.status.listen)
      this.lock.update({ status: formatListenAddress(bound) })
      this.observer.start()
      this.startScan(this.watcher)
      this.connectWhenCurrent()
      logger.info({ version: VERSION, device: this.deviceId, stateDir: config.stateDir, status: formatListenAddress(bound), folders: config.folders.length, service: config.service.mode }, 'daemon started')
    } catch (err) {
      await this.stop()
      throw err
    }
  }

  /** The sync runner, or why there is none yet: a NotReadyError (503) that says what is awaited. */
  private readyRunner (what: string): SyncRunner {
    if (this.runner !== undefined) return this.runner
    if (this.serviceError !== undefined) {
      this.wakeConnect?.()
      throw new NotReadyError(`not ready: ${what} waits for the service, which could not be reached: ${this.serviceError}`, 5)
    }
    const waiting = this.watcher?.status()
    const toHash = waiting?.folders.reduce((n, f) => n + Math.max(0, f.toHash - f.hashed), 0) ?? 0
    const reason = waiting?.currentAt === undefined
      ? `the index is not current yet (scanning${toHash > 0 ? `, ${toHash} ${toHash === 1 ? 'file' : 'files'} to hash` : ''})`
      : 'the service is being reached'
    throw new NotReadyError(`not ready: ${what} starts once the index is current and the service is reached; now ${reason}`)
  }

  /**
   * The index comes first: the service (the embedded one started and signed in to) is reached
   * once the index is current. A service that cannot be reached is an error in status, tried
   * again with a growing wait (up to {@link MAX_CONNECT_RETRY_MS}) until it can; indexing goes on.
   */
  private connectWhenCurrent (): void {
    void (this.scanning ?? Promise.resolve()).then(async () => {
      if (this.stopping === undefined) await this.prepareSyncState()
      for (let attempt = 0; this.stopping === undefined; attempt++) {
        try {
          await this.connectOnce()
          return
        } catch (err) {
          const waitMs = Math.min(MAX_CONNECT_RETRY_MS, 1000 * 2 ** attempt)
          this.serviceError = `${(err as Error).message} (trying again at ${new Date(Date.now() + waitMs).toISOString()})`
          this.logger.error({ err, retryInMs: waitMs }, 'the service could not be reached')
          await this.pause(waitMs)
        }
      }
    }).catch((err: unknown) => { this.logger.error({ err }, 'reaching the service stopped') })
  }

  /** Waits, or less if the daemon stops or someone asks for the service meanwhile. */
  private async pause (ms: number): Promise<void> {
    await new Promise<void>(resolve => {
      const done = (): void => { clearTimeout(timer); this.wakeConnect = undefined; resolve() }
      const timer = setTimeout(done, ms)
      this.wakeConnect = done
      this.stopped.signal.addEventListener('abort', done, { once: true })
    })
  }

  private async connectOnce (): Promise<void> {
    // Loaded here, not at start-up: the clients and the local service are not needed to index.
    const { connectService } = await import('../connect/index.js')
    const connection = await connectService(this.config)
    if (this.stopping !== undefined) {
      await connection.close()
      return
    }
    this.connection = connection
    this.serviceError = undefined
    const { SyncRunner, SyncStore } = await import('../sync/index.js')
    // The start-up check opens it; if that failed, it is opened here (and an error here is tried again).
    const store = this.syncStore ??= new SyncStore(this.config.stateDir)
    this.runner = new SyncRunner({
      store,
      index: this.index as Index,
      logger: this.logger,
      deviceId: this.deviceId,
      clients: () => this.connection?.clients,
      credentials: () => ({ apiKey: safely(this.connection?.credentials.apiKey), sessionToken: safely(this.connection?.credentials.sessionToken) }),
      onEvent: (event) => { this.noteSyncEvent(event) }
    }, this.config)
    this.runner.start()
    // Changes made while the service was being reached, or while the daemon was down, are published too.
    this.runner.noteChange()
    void this.runner.reconcileNow().catch(() => {})
    releaseMemory()
    this.logger.info({ service: connection.describe }, 'service ready')
  }

  /** Onto the event stream; after a reconciliation, the account's side of this device's files is counted afresh. */
  private noteSyncEvent (event: SyncEvent): void {
    this.observer.sync(event)
    if (event.type !== 'reconcile.done' || this.index === undefined) return
    try {
      this.account = { ...this.index.remote.fileStates(this.deviceId), countedAt: new Date().toISOString() }
    } catch (err) {
      this.logger.warn({ err }, 'counting the files on the account\'s side failed')
    }
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

  /** sync.sqlite checked (moved aside if unreadable), a lost index noted against it, killed jobs' temp files removed. */
  private async prepareSyncState (): Promise<void> {
    try {
      const { prepareSyncState } = await import('../sync/index.js')
      const prepared = await prepareSyncState(this.config.stateDir, { indexLost: this.indexLost })
      this.syncStore = prepared.store
      for (const r of prepared.recovered) this.noteRecovery(r.file, r.problem, r.action)
      this.leftoversRemoved = { files: prepared.leftovers.files, bytes: prepared.leftovers.bytes }
      if (prepared.leftovers.files > 0) this.logger.info(this.leftoversRemoved, 'removed temp files left by killed publishes and restores')
    } catch (err) {
      this.logger.error({ err }, 'the start-up check of the sync state failed')
    }
  }

  /** The runner's status reads sync.sqlite: an error there shows in status instead of failing it. */
  private publishStatus (): StatusDocument['publish'] {
    try {
      const status = this.runner?.status() ?? null
      this.syncStateError = null
      return status
    } catch (err) {
      this.syncStateError = `${(err as Error).message}: restart the daemon; it moves a damaged sync.sqlite aside`
      return null
    }
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
    if (this.reloading === undefined) {
      this.reloading = this.reloadOnce().finally(() => { this.reloading = undefined })
      await this.reloading
      return
    }
    this.reloadQueued ??= this.reloading.then(async () => {
      this.reloadQueued = undefined
      await this.reload()
    })
    await this.reloadQueued
  }

  private async reloadOnce (): Promise<void> {
    if (this.stopping !== undefined) {
      this.logger.warn('reload ignored: the daemon is stopping')
      return
    }
    const source = this.config.source
    let plan: ReloadPlan
    try {
      plan = planReload(this.config, loadConfig({ configPath: source }))
    } catch (err) {
      this.logger.error({ err, config: source }, 'reload refused: the config no longer validates; the running one is kept')
      return
    }
    const { next, needRestart, added, removed } = plan
    try {
      this.config = next
      this.logger.level = next.logLevel
      await this.runner?.reconfigure(next)
      const folders = await this.watcher?.setFolders(next.folders)
      this.logger.info({ added: folders?.added ?? added, removed: folders?.removed ?? removed, needRestart }, needRestart.length > 0 ? 'reloaded; restart to apply the rest' : 'reloaded')
    } catch (err) {
      this.logger.error({ err, config: source, added, removed }, 'reload failed while applying the folders: see the folders in status; restart the daemon if they are not as configured')
    }
  }

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

  /** Stops everything in order; safe to call twice, and from a failed start. */
  async stop (): Promise<void> {
    this.stopped.abort()
    this.observer.stop()
    this.stopping ??= (async () => {
      await this.server?.close()
      await this.runner?.stop()
      this.syncStore?.close()
      await this.watcher?.stop()
      await this.connection?.close()
      this.index?.close()
      this.lock?.release()
      this.logger.info({ uptimeSeconds: this.uptimeSeconds() }, 'daemon stopped')
    })()
    await this.stopping
  }

  /** Remembers an error for /status; fed by the logger's error hook. */
  recordError (message: string, code: string | undefined, detail?: string): void {
    this.recentErrors.push({ at: new Date().toISOString(), message, code: code ?? null, detail: detail ?? null })
    this.observer.error(message, code ?? null, detail ?? null)
    if (this.recentErrors.length > DEFAULT_RECENT_ERRORS) this.recentErrors.shift()
  }

  status (): StatusDocument {
    const watch = this.watcher?.status()
    const perFolder = this.index?.entries.totals(this.deviceId) ?? []
    const totals = new Map(perFolder.map(t => [t.folder, t]))
    const folders = (watch?.folders ?? []).map(f => ({
      name: f.name,
      path: f.path,
      state: f.state,
      files: totals.get(f.name)?.files ?? 0,
      bytes: totals.get(f.name)?.bytes ?? 0,
      scan: { scanned: f.scanned, toHash: f.toHash, hashed: f.hashed, hashedBytes: f.hashedBytes },
      skipped: f.skipped,
      skippedFiles: f.skippedFiles,
      error: f.error ?? null
    }))
    const memory = process.memoryUsage()
    return {
      version: VERSION,
      pid: process.pid,
      startedAt: this.startedAt.toISOString(),
      uptimeSeconds: this.uptimeSeconds(),
      device: { id: this.deviceId, hostname: hostname() },
      namespace: this.config.namespace,
      network: this.config.network,
      stateDir: this.config.stateDir,
      cidProfile: this.config.cidProfile,
      service: { mode: this.config.service.mode, endpoint: this.connection?.describe ?? null, error: this.serviceError ?? null },
      publish: this.publishStatus(),
      auth: this.authState(),
      reconcile: this.runner?.reconcileStatus() ?? null,
      account: this.account,
      watcher: { state: watch?.state ?? 'starting', currentAt: watch?.currentAt === undefined ? null : new Date(watch.currentAt).toISOString(), hashing: watch?.hashing ?? { files: 0, bytes: 0, bytesRead: 0 } },
      folders,
      index: {
        path: this.index?.path ?? '',
        ...sumTotals(perFolder),
        rowsWritten: watch?.rowsWritten ?? 0,
        writeErrors: watch?.writeErrors ?? 0,
        writeState: watch?.writer.state ?? 'ok',
        pendingWrites: watch?.writer.pending ?? 0,
        lastError: watch?.writer.lastError === undefined
          ? null
          : { at: new Date(watch.writer.lastError.at).toISOString(), code: watch.writer.lastError.code, message: watch.writer.lastError.message, retryAt: watch.writer.retryAt === undefined ? null : new Date(watch.writer.retryAt).toISOString() }
      },
      drift: watch?.drift ?? null,
      filesSkipped: folders.reduce((n, f) => n + f.skipped, 0),
      memory: { rssBytes: memory.rss, heapUsedBytes: memory.heapUsed },
      lastErrors: [...this.recentErrors],
      events: { lastId: this.events.lastId, streams: this.server?.eventStreams.open ?? 0, dropped: this.server?.eventStreams.dropped ?? 0, peakBufferedBytes: this.server?.eventStreams.peakBufferedBytes ?? 0 },
      stateFiles: { recovered: [...this.recovered], leftoversRemoved: this.leftoversRemoved, syncStateError: this.syncStateError }
    }
  }

  private authState (): StatusDocument['auth'] {
    const token = safely(this.connection?.credentials.sessionToken)
    const expiry = jwtExpiry(token)
    const left = expiry === undefined ? undefined : expiry.getTime() - Date.now()
    const warning = left === undefined
      ? (this.connection !== undefined && token === undefined ? 'no session token: the pointer service cannot be reached' : null)
      : left <= 0
        ? `the session token expired at ${expiry?.toISOString() ?? ''}: publishing is stopped until a new one is given`
        // The embedded service's token renews itself: nothing for the user to do.
        : left < TOKEN_WARNING_MS && this.connection?.mode !== 'embedded' ? `the session token expires at ${expiry?.toISOString() ?? ''}: renew it` : null
    return {
      apiKey: safely(this.connection?.credentials.apiKey) === undefined ? 'missing' : 'present',
      sessionToken: { present: token !== undefined, expiresAt: expiry?.toISOString() ?? null, warning }
    }
  }

  private uptimeSeconds (): number {
    return Math.round((Date.now() - this.startedAt.getTime()) / 100) / 10
  }
}
