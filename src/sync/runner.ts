import { createHash } from 'node:crypto'
import cron, { type ScheduledTask } from 'node-cron'
import { CidsyncError, PointerUnreadableError, PublishHeldError, RemoteUnauthorizedError } from '../errors.js'
import { Histogram, type HistogramSnapshot } from '../util/histogram.js'
import { jwtExpiry } from '../util/jwt.js'
import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import type { Index } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import { SyncStore, type RestoreRecord } from './sync-store.js'
import { publish, type Published } from './publish.js'
import { reconcile, type Reconciled } from './reconcile.js'
import type { SyncEventListener } from './sync-event.js'

/** What /status shows of reconciliation. */
export interface ReconcileStatus {
  readonly running: boolean
  readonly lastRun: string | null
  readonly last: Reconciled | null
  readonly lastError: { readonly at: string, readonly message: string } | null
  readonly remoteFiles: number
  readonly gone: number
  readonly deals: { readonly pending: number, readonly overdue: number, readonly made: number }
  readonly durationsSeconds: HistogramSnapshot
}

/** What /status shows of publishing. */
export interface PublishStatus {
  readonly running: boolean
  readonly last: { readonly cid: string, readonly at: string | null, readonly entries: number } | null
  /** When the next publish is due after recent changes (debounced), if one is. */
  readonly pendingAt: string | null
  readonly lastError: { readonly at: string, readonly message: string } | null
  readonly runs: number
  readonly failures: number
  /** The pointer as last seen: its CID, whether it is this device's last snapshot, and if not, why. */
  readonly pointer: { readonly cid: string | null, readonly at: string | null, readonly inSync: boolean, readonly why: string | null }
  /** Why publishing and reconciling are stopped (a refused or expired credential), until it changes. */
  readonly blocked: string | null
  /** A publish held because it would drop many of this device's entries, until confirmed or they come back. */
  readonly held: { readonly since: string, readonly dropping: number, readonly of: number, readonly message: string } | null
  /** After a failed publish, when it is tried again (the wait doubles with each failure in a row). */
  readonly retryAt: string | null
  /** The pointer names a snapshot that cannot be used here: what, and the fix (`cidsync pointer repair`). */
  readonly pointerProblem: string | null
  readonly durationsSeconds: HistogramSnapshot
  /** Restores into this state dir (run by `cidsync restore`, recorded in sync.sqlite). */
  readonly restores: { readonly count: number, readonly last: string | null, readonly durationsSeconds: HistogramSnapshot }
}

/** What a caller may ask of one publish. */
export interface PublishOptions { readonly confirmDrop?: boolean, readonly repairPointer?: boolean }

/** The first wait after a failed publish, and the longest. */
const RETRY_FIRST_MS = 10_000
const RETRY_MAX_MS = 15 * 60_000

export interface SyncRunnerComponents {
  readonly index: Index
  readonly logger: Logger
  readonly deviceId: string
  /** The service's clients once reached; publishing waits for them. */
  readonly clients: () => ServiceClients | undefined
  /** The credentials now, to tell a renewed one from the one that was refused. */
  readonly credentials: () => { readonly apiKey: string | undefined, readonly sessionToken: string | undefined }
  /** The process's sync store (the daemon's); absent: the runner opens its own on first use and closes it on stop. */
  readonly store?: SyncStore
  /** Told as publishes and reconciliations start, step and end. */
  readonly onEvent?: SyncEventListener
}

function restoreHistory (history: readonly RestoreRecord[]): PublishStatus['restores'] {
  const histogram = new Histogram()
  for (const restore of history) histogram.observe(restore.seconds)
  return { count: history.length, last: history.at(-1)?.at ?? null, durationsSeconds: histogram.snapshot() }
}

/**
 * Runs publishes: on the cron schedule, after changes (debounced: at least `quiet_seconds` after
 * the last change, at most one per `min_interval_seconds`), and on request. Never two at once: a
 * request during a run waits for it and then runs again, once.
 */
export class SyncRunner {
  private task: ScheduledTask | undefined
  private reconcileTask: ScheduledTask | undefined
  private reconciling: Promise<Reconciled> | undefined
  private reconcileState: { lastRun: string | null, last: Reconciled | null, lastError: ReconcileStatus['lastError'] } = { lastRun: null, last: null, lastError: null }
  private debounce: NodeJS.Timeout | undefined
  private pendingAt: number | undefined
  private running: Promise<Published> | undefined
  private again = false
  private lastChangeAt = 0
  private lastRunAt = 0
  private lastError: PublishStatus['lastError'] = null
  private runs = 0
  private failures = 0
  private stopped = false
  private blocked: { reason: string, fingerprint: string } | undefined
  private held: PublishStatus['held'] = null
  private pointerProblem: string | null = null
  private consecutiveFailures = 0
  private retryTimer: NodeJS.Timeout | undefined
  private retryAt: number | undefined
  private readonly publishDurations = new Histogram()
  private readonly reconcileDurations = new Histogram()

  private readonly abort = new AbortController()
  /** The runner's own store, when none was given: opened on first use, closed on stop. */
  private ownStore: SyncStore | undefined

  constructor (private readonly components: SyncRunnerComponents, private config: Config) {}

  /** A reloaded config: schedules and publish settings apply from now on. */
  async reconfigure (config: Config): Promise<void> {
    await this.task?.stop()
    await this.reconcileTask?.stop()
    this.config = config
    if (!this.stopped) this.start()
  }

  start (): void {
    this.task = cron.schedule(this.config.snapshot.schedule, () => { void this.publishNow('schedule').catch(() => {}) })
    this.reconcileTask = cron.schedule(this.config.reconcile.schedule, () => { void this.reconcileNow().catch(() => {}) })
  }

  /** Mirrors the account now (or joins the run in progress). */
  async reconcileNow (): Promise<Reconciled> {
    if (this.reconciling !== undefined) return await this.reconciling
    const clients = this.components.clients()
    if (clients === undefined) throw new Error('the service is not reached yet')
    this.checkBlocked()
    const started = Date.now()
    // A session token known to be expired is not sent: the pointer is read again once it is renewed.
    const expiry = jwtExpiry(this.components.credentials().sessionToken)
    const readPointer = expiry === undefined || expiry.getTime() > Date.now()
    this.reconciling = reconcile({ index: this.components.index, clients, logger: this.components.logger, deviceId: this.components.deviceId, store: this.store() }, { config: this.config, readPointer, signal: this.abort.signal })
    try {
      const result = await this.reconciling
      this.reconcileDurations.observe((Date.now() - started) / 1000)
      this.reconcileState = { lastRun: new Date().toISOString(), last: result, lastError: null }
      this.components.onEvent?.({ type: 'reconcile.done', ms: Date.now() - started, ...result })
      return result
    } catch (err) {
      this.noteRefusal(err)
      this.reconcileState = { ...this.reconcileState, lastError: { at: new Date().toISOString(), message: (err as Error).message } }
      this.components.logger.error({ err }, 'reconcile failed')
      this.components.onEvent?.({ type: 'reconcile.failed', message: (err as Error).message, code: (err as { code?: string }).code ?? null })
      throw err
    } finally {
      this.reconciling = undefined
    }
  }

  reconcileStatus (): ReconcileStatus {
    const counts = this.components.index.remote.counts(this.components.deviceId)
    return {
      running: this.reconciling !== undefined,
      ...this.reconcileState,
      remoteFiles: counts.remoteFiles,
      gone: counts.gone,
      deals: { pending: counts.dealsPending, overdue: counts.dealsOverdue, made: counts.dealsMade },
      durationsSeconds: this.reconcileDurations.snapshot()
    }
  }

  /** Rows changed: publish once things are quiet, and not sooner than the minimum interval. */
  noteChange (): void {
    if (this.stopped) return
    this.lastChangeAt = Date.now()
    const due = Math.max(this.lastChangeAt + this.config.snapshot.quietSeconds * 1000, this.lastRunAt + this.config.snapshot.minIntervalSeconds * 1000)
    clearTimeout(this.debounce)
    this.pendingAt = due
    this.debounce = setTimeout(() => { this.pendingAt = undefined; void this.publishNow('changes').catch(() => {}) }, Math.max(0, due - Date.now()))
    this.debounce.unref()
  }

  /**
   * Publishes now (or right after the run in progress) and answers what was published.
   * `confirmDrop` lets a held publish through; `repairPointer` replaces a pointer whose snapshot
   * cannot be used.
   */
  async publishNow (reason = 'request', options: PublishOptions = {}): Promise<Published> {
    if (this.running !== undefined) {
      this.again = true
      await this.running.catch(() => undefined)
      if (this.running !== undefined) return await this.running
    }
    this.again = false
    this.running = this.run(reason, options)
    try {
      return await this.running
    } finally {
      this.running = undefined
      if (this.again && !this.stopped) void this.publishNow('queued').catch(() => {})
    }
  }

  status (): PublishStatus {
    const store = this.store()
    const last = store.lastPublished()
    const seen = store.remotePointer()
    const remote = seen?.cid
    const base = store.base()
    const unpublished = this.pendingAt !== undefined || (last !== undefined && last.marker !== this.components.index.changeMarker())
    const why = this.pointerProblem ??
      (remote === undefined ? 'not looked at yet (reconciliation reads it)'
        : remote === '' ? 'nothing is stored for this namespace and network yet'
          : remote !== base ? `it holds ${remote}, which another device published and this one has not merged yet (the next publish does)`
            : unpublished ? `changes here are waiting to be published${this.pendingAt === undefined ? '' : ` (at ${new Date(this.pendingAt).toISOString()})`}`
              : null)
    return {
      pointer: { cid: remote === undefined || remote === '' ? null : remote, at: seen?.at ?? null, inSync: why === null, why },
      running: this.running !== undefined,
      last: last === undefined ? null : { cid: last.cid, at: last.at, entries: last.entries },
      pendingAt: this.pendingAt === undefined ? null : new Date(this.pendingAt).toISOString(),
      lastError: this.lastError,
      runs: this.runs,
      failures: this.failures,
      blocked: this.blocked?.reason ?? null,
      held: this.held,
      retryAt: this.retryAt === undefined ? null : new Date(this.retryAt).toISOString(),
      pointerProblem: this.pointerProblem,
      durationsSeconds: this.publishDurations.snapshot(),
      restores: restoreHistory(store.restores())
    }
  }

  async stop (): Promise<void> {
    this.stopped = true
    // A publish in flight stops at its next step boundary or request; its job resumes next start.
    this.abort.abort()
    await this.task?.stop()
    await this.reconcileTask?.stop()
    await this.reconciling?.catch(() => undefined)
    clearTimeout(this.debounce)
    clearTimeout(this.retryTimer)
    await this.running?.catch(() => undefined)
    this.ownStore?.close()
    this.ownStore = undefined
  }

  private store (): SyncStore {
    return this.components.store ?? (this.ownStore ??= new SyncStore(this.config.stateDir))
  }

  private fingerprint (): string {
    const { apiKey, sessionToken } = this.components.credentials()
    return createHash('sha256').update(`${apiKey ?? ''}\n${sessionToken ?? ''}`).digest('hex')
  }

  /** A refused credential stops the remote jobs (no retry storm) until the credential changes. */
  private noteRefusal (err: unknown): void {
    if (err instanceof RemoteUnauthorizedError) this.blocked = { reason: err.message, fingerprint: this.fingerprint() }
  }

  private checkBlocked (): void {
    if (this.blocked === undefined) return
    if (this.blocked.fingerprint !== this.fingerprint()) {
      this.blocked = undefined
      return
    }
    throw new CidsyncError(`stopped until the credential changes: ${this.blocked.reason}`)
  }

  /**
   * After a failure: try again after a wait that doubles with each failure in a row (with jitter),
   * like Syncthing's pull loop, so a transient outage never stops publishing for good. A refused
   * credential and a held publish wait for what can change them instead.
   */
  private scheduleRetry (err: unknown): void {
    clearTimeout(this.retryTimer)
    this.retryAt = undefined
    if (this.stopped || err instanceof RemoteUnauthorizedError || err instanceof PublishHeldError || this.blocked !== undefined) return
    const wait = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(20, this.consecutiveFailures - 1))
    const delay = Math.round(wait * (0.8 + Math.random() * 0.4))
    this.retryAt = Date.now() + delay
    this.retryTimer = setTimeout(() => {
      this.retryAt = undefined
      void this.publishNow('retry').catch(() => {})
    }, delay)
    this.retryTimer.unref()
  }

  private async run (reason: string, options: PublishOptions = {}): Promise<Published> {
    const clients = this.components.clients()
    if (clients === undefined) throw new Error('the service is not reached yet: publishing starts once the index is current')
    this.checkBlocked()
    const expiry = jwtExpiry(this.components.credentials().sessionToken)
    if (expiry !== undefined && expiry.getTime() <= Date.now()) {
      throw new CidsyncError(`the session token expired at ${expiry.toISOString()}: copy a new one into the session-token credential; publishing waits for it (indexing goes on)`)
    }
    const started = Date.now()
    this.runs++
    const onEvent = this.components.onEvent
    onEvent?.({ type: 'publish.started', reason })
    try {
      const published = await publish({
        index: this.components.index, clients, logger: this.components.logger, deviceId: this.components.deviceId, store: this.store(),
        onStep: onEvent === undefined ? undefined : (step, merges) => onEvent({ type: 'publish.step', step, merges })
      }, { config: this.config, passphrase: process.env.CIDSYNC_SNAPSHOT_PASSPHRASE, signal: this.abort.signal, ...options })
      this.lastRunAt = Date.now()
      this.publishDurations.observe((this.lastRunAt - started) / 1000)
      this.lastError = null
      this.held = null
      this.pointerProblem = null
      this.consecutiveFailures = 0
      clearTimeout(this.retryTimer)
      this.retryAt = undefined
      // Changes noted before this run began are in what it published: nothing is pending for them.
      if (this.pendingAt !== undefined && this.lastChangeAt <= started) {
        clearTimeout(this.debounce)
        this.pendingAt = undefined
      }
      if (!published.skipped) this.components.logger.info({ reason, cid: published.cid, entries: published.entries, merged: published.merged, ms: Date.now() - started }, 'published')
      onEvent?.({ type: 'publish.done', reason, ...published, ms: Date.now() - started })
      return published
    } catch (err) {
      this.failures++
      this.consecutiveFailures++
      this.noteRefusal(err)
      this.lastError = { at: new Date().toISOString(), message: (err as Error).message }
      if (err instanceof PublishHeldError) this.held = { since: this.held?.since ?? new Date().toISOString(), dropping: err.dropping, of: err.of, message: err.message }
      this.pointerProblem = err instanceof PointerUnreadableError ? err.message : null
      this.components.logger.error({ reason, err }, 'publish failed')
      onEvent?.({ type: 'publish.failed', reason, message: (err as Error).message, code: (err as { code?: string }).code ?? null })
      this.scheduleRetry(err)
      throw err
    }
  }
}
