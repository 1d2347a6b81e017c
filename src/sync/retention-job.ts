import type { Logger } from 'pino'
import { NotReadyError, PruneContendedError, PruneDeletesRefusedError } from '../errors.js'
import { publishNow } from '../util/clock.js'
import { forget } from './forget/index.js'
import { notePruned, prune, type PruneInit, type Pruned, type Repacked, type RepackInit } from './prune/index.js'
import { PrunePlanner } from './prune-planner.js'
import type { Repository } from './repository.js'
import { Scheduler } from './scheduler.js'
import { codeOf } from './run-records.js'
import type { ForgetRecord, PruneRecord, PrunePlanRecord } from './state/index.js'

/**
 * What status shows of forget and prune: the daemon's last run and its error; then, from
 * sync.sqlite, the last forget, prune and count of any process, and the daemon's next count.
 */
export interface RetentionStatus {
  /** False without `[retention]`: nothing is ever forgotten. */
  readonly enabled: boolean
  readonly running: boolean
  readonly lastRun: {
    readonly at: string
    readonly kept: number
    readonly forgotten: number
    /** Objects and bytes the prune deleted. */
    readonly deleted: number
    readonly bytes: number
    /** Mostly dead packs the prune copied the live files of: their old copies go at the prune after a publish. */
    readonly repacked?: { readonly packs: number, readonly bytes: number, readonly freed: number }
  } | null
  readonly lastError: { readonly at: string, readonly message: string, readonly code: string | null } | null
  /** Why the last scheduled run did not start (the last drill failed), or null. */
  readonly skipped: string | null
  /** The last forget that ran, from the CLI or the daemon (sync.sqlite); null before the first. */
  readonly lastForget?: ForgetRecord | null
  /** The last prune that ran (not a dry run), from the CLI or the daemon; null before the first. */
  readonly lastPrune?: PruneRecord | null
  /** What the last prune or dry run counted, as of its `at`: the account's objects, what a prune would free. */
  readonly plan?: PrunePlanRecord | null
  /** When the daemon counts again what a prune would free (what `prune_margin` held back may go then), or null. */
  readonly planDueAt?: string | null
  /** The daemon's last count of what a prune would free failed: when, why (null once one succeeds). */
  readonly planError?: { readonly at: string, readonly message: string, readonly code: string | null } | null
}

export interface RetentionJobComponents {
  readonly repository: Repository
  readonly logger: Logger
  /** Whether the last restore drill failed: nothing is forgotten then, while the history may be damaged. */
  readonly drillFailed: () => boolean
  /** A drill of the kept history, run after a forget and prune that changed something. */
  readonly drill: () => Promise<void>
  /** The embedded service's space reclaim, after a prune deleted uploads (a remote service reclaims on its own). */
  readonly reclaim?: () => Promise<unknown>
  /** Whether the embedded service has space to reclaim though nothing was deleted now (a reclaim cut short). */
  readonly reclaimDue?: () => Promise<boolean>
  /** This device's index, where a prune's repack records what it moved. */
  readonly repack?: RepackInit
  /**
   * A publish of this device's index now: after a repack, so that a second prune deletes the
   * packs it rewrote at once, instead of a schedule later.
   */
  readonly publish?: () => Promise<unknown>
}

/**
 * The daemon's forget and prune, on `[retention] schedule` (docs/retention.md). Never while the
 * last drill failed: a history that may be damaged is not thinned. After a run that changed
 * something, a drill of what is kept. A failure is shown and tried again, backing off.
 */
export class RetentionJob {
  private readonly scheduler: Scheduler<void>
  /** Counts again what a prune would free once `prune_margin` has passed. */
  private readonly planner: PrunePlanner
  private lastRun: RetentionStatus['lastRun'] = null
  private lastError: RetentionStatus['lastError'] = null
  private skipped: string | null = null

  constructor (private readonly components: RetentionJobComponents) {
    this.scheduler = new Scheduler<void>({
      timing: () => ({ cron: this.components.repository.config.retention?.schedule ?? '' }),
      run: async () => { await this.run() },
      ready: () => { if (this.components.repository.config.retention === undefined) throw new NotReadyError('no [retention] in the config: every publish is kept', 5) },
      whenBusy: 'join',
      retry: { firstMs: 60_000, maxMs: 6 * 3_600_000, retryable: () => true }
    })
    this.planner = new PrunePlanner({ repository: components.repository, logger: components.logger, busy: () => this.scheduler.busy })
  }

  start (): void {
    this.scheduler.start()
    this.planner.arm()
  }

  async restart (): Promise<void> {
    await this.scheduler.restart()
    this.planner.arm()
  }

  async stop (): Promise<void> {
    await this.planner.stop()
    await this.scheduler.stop()
  }

  /** A forget and prune now (`POST /retention`), or the one in progress. */
  async runNow (): Promise<void> {
    await this.scheduler.runNow('request')
  }

  status (): RetentionStatus {
    const planner = this.planner.status()
    return {
      enabled: this.components.repository.config.retention !== undefined,
      running: this.scheduler.busy,
      lastRun: this.lastRun,
      lastError: this.lastError,
      skipped: this.skipped,
      ...this.records(),
      planDueAt: planner.dueAt,
      planError: planner.error
    }
  }

  /** What sync.sqlite holds of the last forget, prune and count: CLI runs included. */
  private records (): Pick<RetentionStatus, 'lastForget' | 'lastPrune' | 'plan'> {
    try {
      const records = this.components.repository.store.retention
      return { lastForget: records.lastForget(), lastPrune: records.lastPrune(), plan: records.prunePlan() }
    } catch {
      // sync.sqlite unreadable: status says so (stateFiles.syncStateError), not this.
      return { lastForget: null, lastPrune: null, plan: null }
    }
  }

  /**
   * A prune that rewrote packs: the daemon's index is current, so it is published now, and a
   * second prune deletes the old packs the publish no longer names. Answers both prunes' deletes
   * together. A publish that fails leaves them for the next run, said in the log.
   */
  private async afterRepack (first: Pruned, init: PruneInit): Promise<Pruned> {
    const { publish, logger, repository } = this.components
    if (publish === undefined || (first.repacked?.made ?? 0) === 0) return first
    try {
      await publish()
    } catch (err) {
      logger.warn({ err }, 'retention: the publish after a repack failed; the next prune deletes the rewritten packs')
      return first
    }
    const now = publishNow()
    // Without a repack of its own: one run reads at most one plan's packs, and counts them all.
    const { repack: _repack, ...deleting } = init
    let second: Pruned
    try {
      second = await prune(repository, { ...deleting, now })
    } catch (err) {
      // A publish landed meanwhile (another device, the schedule): the first prune's work stands.
      if (!(err instanceof PruneContendedError)) throw err
      logger.warn({ err }, 'retention: the prune after a repack met a publish; the next prune deletes the rewritten packs')
      return first
    }
    const deleted = { ...first.deleted }
    for (const kind of Object.keys(deleted) as Array<keyof typeof deleted>) deleted[kind] += second.deleted[kind]
    const objects = (d: Pruned['deleted']): number => d.root + d.content + d.segment + d.manifest
    // Recorded as one prune: what both deleted, what the account holds after, what was rewritten.
    const held = { objects: second.held.objects + objects(first.deleted), bytes: second.held.bytes + first.bytes }
    return notePruned(repository, { now }, { ...second, held, deleted, bytes: first.bytes + second.bytes, repacked: { ...first.repacked as Repacked, waiting: second.repacked?.waiting ?? 0, waitingBytes: second.repacked?.waitingBytes ?? 0, oldDeleted: true } })
  }

  private async run (): Promise<void> {
    const { repository, logger } = this.components
    const retention = repository.config.retention
    if (retention === undefined) return
    if (this.components.drillFailed()) {
      this.skipped = 'the last restore drill failed: nothing is forgotten until one passes'
      logger.warn(this.skipped)
      return
    }
    this.skipped = null
    // A count of what a prune would free shares the prune's work file: it ends first.
    await this.planner.idle()
    try {
      const now = publishNow()
      const forgot = await forget(repository, { policy: retention.policy, now, timeZone: retention.timeZone })
      const pruneInit = { marginMs: retention.pruneMarginSeconds * 1000, now, ...(this.components.repack === undefined ? {} : { repack: this.components.repack }) }
      const first = await prune(repository, pruneInit)
      const pruned = await this.afterRepack(first, pruneInit)
      const deleted = pruned.deleted.root + pruned.deleted.content + pruned.deleted.segment + pruned.deleted.manifest
      const repacked = pruned.repacked === undefined || pruned.repacked.packs === 0 ? {} : { repacked: { packs: pruned.repacked.packs, bytes: pruned.repacked.bytes, freed: pruned.repacked.freed } }
      this.lastRun = { at: now.toISOString(), kept: forgot.kept, forgotten: forgot.forgotten, deleted, bytes: pruned.bytes, ...repacked }
      this.lastError = null
      logger.info({ kept: forgot.kept, forgotten: forgot.forgotten, deleted, bytes: pruned.bytes, repacked: pruned.repacked }, 'retention: forgot and pruned')
      if (deleted > 0 || await this.components.reclaimDue?.() === true) await this.components.reclaim?.()
      if (forgot.forgotten > 0 || deleted > 0) await this.components.drill()
      // Shown as the run's error, not thrown: the service refuses the same objects on every try, so
      // a retry soon would free nothing. The next scheduled run asks again.
      if (pruned.refused !== undefined && pruned.refused.objects > 0) {
        const refused = new PruneDeletesRefusedError(pruned.refused)
        this.lastError = { at: new Date().toISOString(), message: refused.message, code: refused.code }
        logger.warn({ refused: pruned.refused.objects, cids: pruned.refused.sample, reasons: pruned.refused.reasons }, 'retention: the service refused to delete some objects; they stay')
      }
    } catch (err) {
      this.lastError = { at: new Date().toISOString(), message: (err as Error).message, code: codeOf(err) }
      logger.error({ err }, 'retention: forget and prune failed; tried again later')
      throw err
    } finally {
      this.planner.arm()
    }
  }
}
