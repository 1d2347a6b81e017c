import { createHash } from 'node:crypto'
import type { Logger } from 'pino'
import { CidsyncError, CredentialRefusedError, NotReadyError, PointerUnreadableError, PublishHeldError, RemoteUnauthorizedError, SessionExpiredError } from '../errors.js'
import type { Config } from '../config/index.js'
import type { Index } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import { Histogram } from '../util/histogram.js'
import { jwtExpiry } from '../util/jwt.js'
import { publish } from './publish.js'
import type { Published } from './publish-init.js'
import { reconcile, type Reconciled } from './reconcile.js'
import { Scheduler } from './scheduler.js'
import { publishStatus, type PublishStatus, type ReconcileStatus } from './sync-status.js'
import { SyncStore } from './sync-store.js'
import type { SyncEventListener } from './sync-event.js'
import { historyStatus, restorableStatus, runDrill, type HistoryRow, type RestorableStatus } from './drill.js'
import type { VerifyResult } from './verify.js'
import { ContentKeeper, type ContentStatus } from './content-keeper.js'
import { hostname } from 'node:os'
import { MirrorReplicator, type MirrorLink, type MirrorTiming } from './mirror-replicator.js'
import { mirrorStatus, type MirrorStatus } from './mirror-status.js'
import { drillMirror } from './mirror-drill.js'

export type { PublishStatus, ReconcileStatus } from './sync-status.js'

function codeOf (err: unknown): string | null {
  return err instanceof CidsyncError ? err.code : null
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
  /** Told as publishes and reconciliations start, step and end. */
  readonly onEvent?: SyncEventListener
  /** The process's sync store (the daemon's); absent: the runner opens its own on first use and closes it on stop. */
  readonly store?: SyncStore
  /** This machine's name, as content records and segments carry it. */
  readonly hostname?: string
  /** The mirrors the config names, reached afresh for each config (the previous ones are done with). */
  readonly mirrors?: (config: Config) => readonly MirrorLink[]
  readonly mirrorTiming?: Partial<MirrorTiming>
}

/**
 * The sync jobs as the daemon runs them: publishes on the cron schedule, after changes
 * (debounced: at least `quiet_seconds` after the last change, at most one per
 * `min_interval_seconds`), on request and again after a failure; reconciliation on its schedule
 * and on request. The timing is `scheduler.ts`'s; this keeps what the jobs need (clients,
 * credentials, the store) and what status shows of them. A refused credential stops both until
 * it changes; a session token known to be expired is never sent.
 */
export class SyncRunner {
  private readonly publishing: Scheduler<Published, PublishOptions>
  private readonly reconciling: Scheduler<Reconciled>
  private readonly drilling: Scheduler<VerifyResult>
  private reconcileState: { lastRun: string | null, last: Reconciled | null, lastError: ReconcileStatus['lastError'] } = { lastRun: null, last: null, lastError: null }
  private lastError: PublishStatus['lastError'] = null
  private runs = 0
  private failures = 0
  private blocked: { reason: string, fingerprint: string } | undefined
  private held: PublishStatus['held'] = null
  private pointerProblem: string | null = null
  private readonly publishDurations = new Histogram()
  private readonly reconcileDurations = new Histogram()
  private readonly abort = new AbortController()
  /** The runner's own store, when none was given: opened on first use, closed on stop. */
  private ownStore: SyncStore | undefined
  /** Stores the content of storing folders: in the background, and before each publish. */
  private readonly keeper: ContentKeeper
  /** One copy loop per mirror, each on its own. */
  private replicators: Array<{ link: MirrorLink, replicator: MirrorReplicator }> = []

  constructor (private readonly components: SyncRunnerComponents, private config: Config) {
    this.keeper = new ContentKeeper({
      index: components.index, logger: components.logger, deviceId: components.deviceId, hostname: components.hostname ?? hostname(),
      clients: components.clients, store: () => this.store(), onEvent: components.onEvent
    }, config)
    this.publishing = new Scheduler<Published, PublishOptions>({
      timing: () => ({ cron: this.config.snapshot.schedule, quietMs: this.config.snapshot.quietSeconds * 1000, minIntervalMs: this.config.snapshot.minIntervalSeconds * 1000 }),
      ready: () => { this.readyToPublish() },
      run: async (reason, options) => await this.runPublish(reason, options ?? {}),
      whenBusy: 'rerun',
      // A refused credential and a held publish wait for what can change them instead.
      retry: { firstMs: RETRY_FIRST_MS, maxMs: RETRY_MAX_MS, retryable: (err) => !(err instanceof RemoteUnauthorizedError || err instanceof PublishHeldError || this.blocked !== undefined) }
    })
    this.reconciling = new Scheduler<Reconciled>({
      timing: () => ({ cron: this.config.reconcile.schedule }),
      ready: () => {
        if (this.components.clients() === undefined) throw new NotReadyError('not ready: reconciliation waits for the service to be reached', 5)
        this.checkBlocked()
      },
      run: async () => await this.runReconcile(),
      whenBusy: 'join'
    })
    this.drilling = new Scheduler<VerifyResult>({
      timing: () => ({ cron: this.config.verify.schedule }),
      ready: () => {
        if (this.components.clients() === undefined) throw new NotReadyError('not ready: the restore drill waits for the service to be reached', 5)
        this.checkBlocked()
      },
      run: async () => await this.runDrill(),
      whenBusy: 'join'
    })
  }

  /** A reloaded config: schedules and publish settings apply from now on. */
  async reconfigure (config: Config): Promise<void> {
    this.config = config
    await this.keeper.reconfigure(config)
    await this.publishing.restart()
    await this.reconciling.restart()
    await this.drilling.restart()
    await this.stopMirrors()
    this.startMirrors()
  }

  start (): void {
    this.startMirrors()
    this.keeper.start()
    this.publishing.start()
    this.reconciling.start()
    this.drilling.start()
  }

  /** A restore drill now (or joins the one in progress): what the pointer names, fetched, verified, decrypted, checked. */
  async verifyNow (): Promise<VerifyResult> {
    return await this.drilling.runNow()
  }

  /** A restore drill against one mirror alone, recorded for status (the daemon's `POST /verify?mirror=NAME`). */
  async verifyMirrorNow (name: string): Promise<VerifyResult> {
    const found = this.replicators.find(r => r.link.name === name)
    if (found === undefined) throw new NotReadyError(`no mirror named ${JSON.stringify(name)} runs in this daemon`, 5)
    return await drillMirror({ index: this.components.index, logger: this.components.logger, deviceId: this.components.deviceId, clients: found.link.clients, log: this.store().mirrorLog }, name, this.config, { signal: this.abort.signal })
  }

  /** Each mirror: what it lacks, since when, its last publish, errors and drill. */
  mirrorsStatus (): MirrorStatus[] {
    const log = this.store().mirrorLog
    return this.replicators.map(({ link, replicator }) => mirrorStatus(link, log, replicator.state()))
  }

  /** The last restore drill (null before the first). */
  restorable (): RestorableStatus | null {
    return restorableStatus(this.store())
  }

  /** The publishes from the pointer back, as far as the manifests already read go (nothing fetched). */
  history (limit = 100): HistoryRow[] {
    return historyStatus(this.store(), this.components.index, limit)
  }

  /** Mirrors the account now (or joins the run in progress). */
  async reconcileNow (): Promise<Reconciled> {
    return await this.reconciling.runNow()
  }

  /** Rows changed: publish once things are quiet, and not sooner than the minimum interval. */
  noteChange (): void {
    this.keeper.noteChange()
    this.publishing.noteChange()
  }

  /** What is stored of the storing folders' content, what waits and what failed. */
  contentStatus (): ContentStatus {
    return this.keeper.status()
  }

  /** What the keeper uploads now and what failed, by `folder/path`, without counting the folders. */
  contentActivity (): ReturnType<ContentKeeper['activity']> {
    return this.keeper.activity()
  }

  /**
   * Publishes now (or right after the run in progress) and answers what was published.
   * `confirmDrop` lets a held publish through; `repairPointer` replaces a pointer whose snapshot
   * cannot be used.
   */
  async publishNow (reason = 'request', options: PublishOptions = {}): Promise<Published> {
    return await this.publishing.runNow(reason, options)
  }

  reconcileStatus (): ReconcileStatus {
    const counts = this.components.index.remote.counts(this.components.deviceId)
    return {
      running: this.reconciling.busy,
      ...this.reconcileState,
      remoteFiles: counts.remoteFiles,
      gone: counts.gone,
      deals: { pending: counts.dealsPending, overdue: counts.dealsOverdue, made: counts.dealsMade },
      durationsSeconds: this.reconcileDurations.snapshot()
    }
  }

  status (): PublishStatus {
    return publishStatus(this.store(), this.components.index.changeMarker(), {
      running: this.publishing.busy,
      pendingAt: this.publishing.pendingAt,
      retryAt: this.publishing.retryAt,
      lastError: this.lastError,
      runs: this.runs,
      failures: this.failures,
      blocked: this.blocked?.reason ?? null,
      held: this.held,
      pointerProblem: this.pointerProblem,
      durationsSeconds: this.publishDurations.snapshot(),
      ipnsKey: this.config.snapshot.ipnsKey
    })
  }

  async stop (): Promise<void> {
    // A publish in flight stops at its next step boundary or request; its job resumes next start.
    this.abort.abort()
    await Promise.all([this.keeper.stop(), this.publishing.stop(), this.reconciling.stop(), this.drilling.stop(), this.stopMirrors()])
    this.ownStore?.close()
    this.ownStore = undefined
  }

  private startMirrors (): void {
    const links = this.components.mirrors?.(this.config) ?? []
    this.replicators = links.map(link => {
      const replicator = new MirrorReplicator({ link, primary: this.components.clients, store: this.store(), logger: this.components.logger, config: () => this.config, timing: this.components.mirrorTiming, onEvent: this.components.onEvent })
      replicator.start()
      return { link, replicator }
    })
  }

  private async stopMirrors (): Promise<void> {
    const stopping = this.replicators
    this.replicators = []
    await Promise.all(stopping.map(async r => { await r.replicator.stop() }))
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
    throw new CredentialRefusedError(`stopped until the credential changes: ${this.blocked.reason}`)
  }

  /** Why a publish cannot start now (not a failure: nothing is counted or retried). */
  private readyToPublish (): void {
    if (this.components.clients() === undefined) throw new NotReadyError('not ready: publishing starts once the index is current and the service reached', 5)
    this.checkBlocked()
    const expiry = jwtExpiry(this.components.credentials().sessionToken)
    if (expiry !== undefined && expiry.getTime() <= Date.now()) {
      throw new SessionExpiredError(`the session token expired at ${expiry.toISOString()}: copy a new one into the session-token credential; publishing waits for it (indexing goes on)`)
    }
  }

  private async runPublish (reason: string, options: PublishOptions): Promise<Published> {
    const clients = this.components.clients() as ServiceClients
    const started = Date.now()
    this.runs++
    const onEvent = this.components.onEvent
    onEvent?.({ type: 'publish.started', reason })
    try {
      // Content first, so the publish lists files as stored that are. A pass that fails is the
      // keeper's to retry and show; the index is published all the same, and says what is not stored.
      const content = await this.keeper.storeForPublish({ retryFailed: reason === 'request' })
      const published = await publish({
        index: this.components.index, clients, logger: this.components.logger, deviceId: this.components.deviceId, store: this.store(),
        onStep: onEvent === undefined ? undefined : (step, merges) => onEvent({ type: 'publish.step', step, merges })
      }, { config: this.config, passphrase: process.env.CIDSYNC_SNAPSHOT_PASSPHRASE, signal: this.abort.signal, ...options })
      this.publishDurations.observe((Date.now() - started) / 1000)
      this.lastError = null
      this.held = null
      this.pointerProblem = null
      if (!published.skipped) this.components.logger.info({ reason, cid: published.cid, entries: published.entries, merged: published.merged, ms: Date.now() - started }, 'published')
      // Logged with the publish: each mirror copies it in its own loop, which this never waits for.
      for (const r of this.replicators) r.replicator.wake()
      onEvent?.({ type: 'publish.done', reason, ...published, ms: Date.now() - started })
      // A failed drill is looked at again once a publish went through, not only at its next schedule.
      if (!published.skipped && this.restorable()?.ok === false) void this.drilling.runNow('after a publish').catch(() => {})
      // The account now holds this publish's uploads and a deal request: mirror it now, so status
      // and the dashboard do not say "0 uploads" until the next scheduled reconciliation.
      if (!published.skipped) void this.reconciling.runNow('after a publish').catch(() => {})
      return content === undefined ? published : { ...published, content }
    } catch (err) {
      this.failures++
      this.noteRefusal(err)
      this.lastError = { at: new Date().toISOString(), message: (err as Error).message, code: codeOf(err) }
      if (err instanceof PublishHeldError) this.held = { since: this.held?.since ?? new Date().toISOString(), dropping: err.dropping, of: err.of, message: err.message }
      this.pointerProblem = err instanceof PointerUnreadableError ? err.message : null
      this.components.logger.error({ reason, err }, 'publish failed')
      onEvent?.({ type: 'publish.failed', reason, message: (err as Error).message, code: (err as { code?: string }).code ?? null })
      throw err
    }
  }

  private async runDrill (): Promise<VerifyResult> {
    const clients = this.components.clients() as ServiceClients
    const { index, logger, deviceId } = this.components
    try {
      const result = await runDrill({ index, clients, logger, deviceId, store: this.store() }, this.config, this.abort.signal)
      const failed = restorableStatus(this.store())?.failed ?? null
      this.components.onEvent?.({ type: 'drill', ok: result.restorable, cid: result.cid, failed, segments: result.segments })
      return result
    } catch (err) {
      this.noteRefusal(err)
      logger.error({ err }, 'restore drill could not run')
      throw err
    } finally {
      // Each mirror drilled alone, whatever the primary's drill found: a second home must restore by itself.
      await this.drillMirrors()
    }
  }

  private async drillMirrors (): Promise<void> {
    for (const { link } of this.replicators) {
      if (this.abort.signal.aborted) return
      try {
        await this.verifyMirrorNow(link.name)
      } catch (err) {
        this.components.logger.error({ mirror: link.name, err }, 'mirror restore drill could not run')
      }
    }
  }

  private async runReconcile (): Promise<Reconciled> {
    const clients = this.components.clients() as ServiceClients
    const started = Date.now()
    // A session token known to be expired is not sent: the pointer is read again once it is renewed.
    const expiry = jwtExpiry(this.components.credentials().sessionToken)
    const readPointer = expiry === undefined || expiry.getTime() > Date.now()
    try {
      const result = await reconcile({ index: this.components.index, clients, logger: this.components.logger, deviceId: this.components.deviceId, store: this.store() }, { config: this.config, readPointer, signal: this.abort.signal })
      this.reconcileDurations.observe((Date.now() - started) / 1000)
      this.reconcileState = { lastRun: new Date().toISOString(), last: result, lastError: null }
      this.components.onEvent?.({ type: 'reconcile.done', ms: Date.now() - started, ...result })
      return result
    } catch (err) {
      this.noteRefusal(err)
      this.reconcileState = { ...this.reconcileState, lastError: { at: new Date().toISOString(), message: (err as Error).message, code: codeOf(err) } }
      this.components.logger.error({ err }, 'reconcile failed')
      this.components.onEvent?.({ type: 'reconcile.failed', message: (err as Error).message, code: (err as { code?: string }).code ?? null })
      throw err
    }
  }
}
