import { NotReadyError, PublishHeldError, RemoteUnauthorizedError } from '../errors.js'
import { type Config } from '../config/index.js'
import { publish, type Published } from './publish/index.js'
import { reconcile, type Reconciled } from './reconcile.js'
import { Scheduler } from './scheduler.js'
import { publishStatus, type PublishStatus, type ReconcileStatus } from './status.js'
import type { SyncComponents } from './sync-components.js'
import type { SyncEventListener } from './sync-event.js'
import { historyStatus, restorableStatus, runDrill, type HistoryRow, type RestorableStatus, type VerifyResult } from './verify/index.js'
import { compactOwnIndex, ContentKeeper, type ContentStatus } from './storing/index.js'
import { hostname } from 'node:os'
import { MirrorReplicator, type MirrorLink, type MirrorTiming, mirrorStatus, type MirrorStatus, drillMirror, logIndexContent } from './mirrors/index.js'
import { CredentialGate, type CredentialsNow } from './credential-gate.js'
import { PublishRecord, ReconcileRecord } from './run-records.js'
import { RetentionJob, type RetentionStatus } from './retention-job.js'

export type { PublishStatus, ReconcileStatus } from './status.js'
export type { RetentionStatus } from './retention-job.js'

/** What a caller may ask of one publish. */
export interface PublishOptions { readonly confirmDrop?: boolean, readonly repairPointer?: boolean, readonly marks?: readonly string[] }

/** The first wait after a failed publish, and the longest. */
const RETRY_FIRST_MS = 10_000
const RETRY_MAX_MS = 15 * 60_000

/**
 * The sync components, made once the service is reached: the repository on it holds the config,
 * the passphrase and the daemon's sync store (closed by the daemon after {@link SyncRunner.stop}).
 */
export interface SyncRunnerComponents extends SyncComponents {
  /** The credentials now, to tell a renewed one from the one that was refused. */
  readonly credentials: CredentialsNow
  /** Told as publishes and reconciliations start, step and end. */
  readonly onEvent?: SyncEventListener
  /** This machine's name, as content records and segments carry it. */
  readonly hostname?: string
  /** The mirrors the config names, reached afresh for each config (the previous ones are done with). */
  readonly mirrors?: (config: Config) => readonly MirrorLink[]
  readonly mirrorTiming?: Partial<MirrorTiming>
  /** The embedded service's space reclaim, run after a prune (a remote service reclaims on its own). */
  readonly reclaim?: () => Promise<unknown>
  /** Whether the embedded service has space to reclaim (deleted uploads, or a reclaim cut short). */
  readonly reclaimDue?: () => Promise<boolean>
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
  /** Forget and prune on `[retention] schedule`. */
  private readonly retention: RetentionJob
  /** What status shows of the publishes: runs, failures, the last error, a held publish. */
  private readonly published = new PublishRecord()
  /** A refused credential stops the remote jobs until it changes. */
  private readonly gate = new CredentialGate(() => this.components.credentials())
  private readonly reconciled = new ReconcileRecord()
  private readonly abort = new AbortController()
  /** Stores the content of storing folders: in the background, and before each publish. */
  private readonly keeper: ContentKeeper
  /** One copy loop per mirror, each on its own. */
  private replicators: Array<{ link: MirrorLink, replicator: MirrorReplicator }> = []

  constructor (private readonly components: SyncRunnerComponents) {
    this.keeper = new ContentKeeper({ ...components, hostname: components.hostname ?? hostname() })
    this.publishing = new Scheduler<Published, PublishOptions>({
      timing: () => ({ cron: this.config.snapshot.schedule, quietMs: this.config.snapshot.quietSeconds * 1000, minIntervalMs: this.config.snapshot.minIntervalSeconds * 1000 }),
      ready: () => { this.readyToPublish() },
      run: async (reason, options) => await this.runPublish(reason, options ?? {}),
      whenBusy: 'rerun',
      // A refused credential and a held publish wait for what can change them instead.
      retry: { firstMs: RETRY_FIRST_MS, maxMs: RETRY_MAX_MS, retryable: (err) => !(err instanceof RemoteUnauthorizedError || err instanceof PublishHeldError || this.gate.reason !== null) }
    })
    this.reconciling = new Scheduler<Reconciled>({
      timing: () => ({ cron: this.config.reconcile.schedule }),
      ready: () => { this.serviceReady() },
      run: async () => await this.runReconcile(),
      whenBusy: 'join'
    })
    this.retention = new RetentionJob({
      repository: components.repository,
      logger: components.logger,
      drillFailed: () => this.restorable()?.ok === false,
      drill: async () => { await this.drilling.runNow('after a prune') },
      reclaim: components.reclaim,
      reclaimDue: components.reclaimDue,
      repack: {
        index: components.index,
        deviceId: components.deviceId,
        hostname: components.hostname ?? hostname(),
        compactIndex: async (signal) => await compactOwnIndex(components.repository, { index: components.index, deviceId: components.deviceId, signal })
      },
      publish: async () => await this.publishNow('after a repack')
    })
    this.drilling = new Scheduler<VerifyResult>({
      timing: () => ({ cron: this.config.verify.schedule }),
      ready: () => { this.serviceReady() },
      run: async () => await this.runDrill(),
      whenBusy: 'join'
    })
  }

  /** The config now: the repository's, which a reload replaces. */
  private get config (): Config {
    return this.components.repository.config
  }

  /** The repository's config was reloaded: schedules and publish settings apply from now on. */
  async reconfigure (): Promise<void> {
    await this.keeper.reconfigure()
    await this.publishing.restart()
    await this.reconciling.restart()
    await this.drilling.restart()
    await this.retention.restart()
    await this.stopMirrors()
    this.startMirrors()
  }

  start (): void {
    this.startMirrors()
    this.keeper.start()
    this.publishing.start()
    this.reconciling.start()
    this.drilling.start()
    this.retention.start()
  }

  /** Forget and prune now (or join the run in progress), as `[retention] schedule` would. */
  async retainNow (): Promise<void> {
    await this.retention.runNow()
  }

  /** What status shows of forget and prune. */
  retentionStatus (): RetentionStatus {
    return this.retention.status()
  }

  /** A restore drill now (or joins the one in progress): what the pointer names, fetched, verified, decrypted, checked. */
  async verifyNow (): Promise<VerifyResult> {
    return await this.drilling.runNow()
  }

  /** A restore drill against one mirror alone, recorded for status (the daemon's `POST /verify?mirror=NAME`). */
  async verifyMirrorNow (name: string): Promise<VerifyResult> {
    const found = this.replicators.find(r => r.link.name === name)
    if (found === undefined) throw new NotReadyError(`no mirror named ${JSON.stringify(name)} runs in this daemon`, 5)
    const { index, logger, deviceId } = this.components
    const { store } = this.components.repository
    const repository = this.components.repository.other(found.link.clients)
    try {
      return await drillMirror({ index, logger, deviceId, repository, log: store.mirrorLog }, name, { signal: this.abort.signal })
    } finally {
      await repository.close()
    }
  }

  /** Each mirror: what it lacks, since when, its last publish, errors and drill. */
  mirrorsStatus (): MirrorStatus[] {
    const log = this.components.repository.store.mirrorLog
    // What came into the index since the loops last looked is counted as waiting, never as caught up.
    if (this.replicators.length > 0) logIndexContent(this.components.index, log, this.components.deviceId)
    return this.replicators.map(({ link, replicator }) => mirrorStatus(link, log, replicator.state()))
  }

  /** The last restore drill (null before the first). */
  restorable (): RestorableStatus | null {
    return restorableStatus(this.components.repository.store)
  }

  /** The publishes from the pointer back, as far as the manifests already read go (nothing fetched). */
  history (limit = 100): HistoryRow[] {
    return historyStatus(this.components.repository.store, this.components.index, limit)
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
    // A plain request may share a rerun with others; one with options gets a run of its own.
    const asked = options.confirmDrop === true || options.repairPointer === true || (options.marks?.length ?? 0) > 0
    return await this.publishing.runNow(reason, asked ? options : undefined)
  }


  reconcileStatus (): ReconcileStatus {
    return this.reconciled.status(this.reconciling.busy, this.components.index, this.components.deviceId)
  }

  status (): PublishStatus {
    return publishStatus(this.components.repository.store, this.components.index.changeMarker(), {
      running: this.publishing.busy,
      pendingAt: this.publishing.pendingAt,
      retryAt: this.publishing.retryAt,
      ...this.published.state(),
      blocked: this.gate.reason,
      ipnsKey: this.config.snapshot.ipnsKey
    })
  }

  async stop (): Promise<void> {
    // A publish in flight stops at its next step boundary or request; its job resumes next start.
    this.abort.abort()
    await Promise.all([this.keeper.stop(), this.publishing.stop(), this.reconciling.stop(), this.drilling.stop(), this.retention.stop(), this.stopMirrors()])
  }

  private startMirrors (): void {
    const links = this.components.mirrors?.(this.config) ?? []
    this.replicators = links.map(link => {
      const replicator = new MirrorReplicator({ link, repository: this.components.repository, index: this.components.index, deviceId: this.components.deviceId, logger: this.components.logger, config: () => this.config, timing: this.components.mirrorTiming, onEvent: this.components.onEvent })
      replicator.start()
      return { link, replicator }
    })
  }

  private async stopMirrors (): Promise<void> {
    const stopping = this.replicators
    this.replicators = []
    await Promise.all(stopping.map(async r => { await r.replicator.stop() }))
  }

  /** Why a job that talks to the service cannot start now (not a failure: nothing is counted or retried). */
  private serviceReady (): void {
    this.gate.check()
  }

  /** Why a publish cannot start now (not a failure: nothing is counted or retried). */
  private readyToPublish (): void {
    this.gate.check()
    this.gate.checkSession()
  }

  private async runPublish (reason: string, options: PublishOptions): Promise<Published> {
    const started = Date.now()
    this.published.started()
    const onEvent = this.components.onEvent
    onEvent?.({ type: 'publish.started', reason })
    try {
      // Content first, so the publish lists files as stored that are. A pass that fails is the
      // keeper's to retry and show; the index is published all the same, and says what is not stored.
      const content = await this.keeper.storeForPublish({ retryFailed: reason === 'request' })
      const { index, logger, deviceId, repository } = this.components
      const published = await publish({
        index, logger, deviceId, repository,
        onStep: onEvent === undefined ? undefined : (step, merges) => onEvent({ type: 'publish.step', step, merges })
      }, { signal: this.abort.signal, ...options })
      this.published.succeeded(Date.now() - started)
      if (!published.skipped) this.components.logger.info({ reason, cid: published.cid, entries: published.entries, merged: published.merged, ms: Date.now() - started }, 'published')
      // A prune at the same time was deleting content it names: stored again, and published anew.
      if ((published.storedAgain ?? 0) > 0) this.noteChange()
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
      this.published.failed(err)
      this.gate.note(err)
      this.components.logger.error({ reason, err }, 'publish failed')
      onEvent?.({ type: 'publish.failed', reason, message: (err as Error).message, code: (err as { code?: string }).code ?? null })
      throw err
    }
  }

  private async runDrill (): Promise<VerifyResult> {
    const { index, logger, deviceId, repository } = this.components
    try {
      const result = await runDrill({ index, logger, deviceId, repository }, { signal: this.abort.signal })
      const failed = restorableStatus(this.components.repository.store)?.failed ?? null
      this.components.onEvent?.({ type: 'drill', ok: result.restorable, cid: result.cid, failed, segments: result.segments })
      return result
    } catch (err) {
      this.gate.note(err)
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
    const started = Date.now()
    // A session token known to be expired is not sent: the pointer is read again once it is renewed.
    const readPointer = this.gate.sessionUsable()
    try {
      const { index, logger, deviceId, repository } = this.components
      const result = await reconcile({ index, logger, deviceId, repository }, { readPointer, signal: this.abort.signal })
      this.reconciled.succeeded(result, Date.now() - started)
      // Nothing else would publish on an idle daemon: the pointer stays set back until one does.
      if (result.pointerSetBack) void this.publishing.runNow('the pointer was set back').catch(() => {})
      this.components.onEvent?.({ type: 'reconcile.done', ms: Date.now() - started, ...result })
      return result
    } catch (err) {
      // Cut short by the stop (the daemon shutting down): no failure to record or to show.
      if (this.abort.signal.aborted) {
        this.components.logger.info('reconcile stopped: cidsync is stopping')
        throw err
      }
      this.gate.note(err)
      this.reconciled.failed(err)
      this.components.logger.error({ err }, 'reconcile failed')
      this.components.onEvent?.({ type: 'reconcile.failed', message: (err as Error).message, code: (err as { code?: string }).code ?? null })
      throw err
    }
  }
}
