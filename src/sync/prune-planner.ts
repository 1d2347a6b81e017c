import type { Logger } from 'pino'
import { publishNow } from '../util/clock.js'
import { prune } from './prune/index.js'
import type { Repository } from './repository.js'
import { codeOf } from './run-records.js'

/** Past the due time, so every object and chain the margin held is past it too. */
const SLACK_MS = 1_000
/** After a count that failed: the next try. */
const RETRY_MS = 3_600_000
/** The longest a timer may wait (a larger delay fires at once); a longer wait is taken in steps. */
const MAX_TIMER_MS = 2_147_483_647

export interface PlannerComponents {
  readonly repository: Repository
  readonly logger: Logger
  /** Whether the daemon's forget and prune runs now: it counts afresh, and the planner waits. */
  readonly busy: () => boolean
}

/**
 * The daemon's count of what a prune would free (docs/retention.md, "The daemon"). A prune keeps
 * what `prune_margin` protects: objects stored within it, chains forgotten within it. When the
 * last count (a prune's or a dry run's) kept some back, a dry run counts again once the margin
 * has passed, so status shows what the next prune will free. So at most one count a margin, and
 * none while nothing waits. The due time is read from sync.sqlite: a restart keeps it.
 */
export class PrunePlanner {
  private timer: NodeJS.Timeout | undefined
  private due: number | undefined
  private running: Promise<void> | undefined
  private failed: { readonly at: string, readonly message: string, readonly code: string | null } | null = null
  private stopped = false

  constructor (private readonly components: PlannerComponents) {}

  /** When the next count is due (null when none waits), and why the last one failed. */
  status (): { readonly dueAt: string | null, readonly error: PrunePlanner['failed'] } {
    return { dueAt: this.due === undefined ? null : new Date(this.due).toISOString(), error: this.failed }
  }

  /** Reads the last count and sets the next one from it; call after each forget and prune, and at start. */
  arm (retryAfterFailure = false): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.due = undefined
    const retention = this.components.repository.config.retention
    if (this.stopped || retention === undefined || retention.pruneMarginSeconds === 0) return
    const plan = this.lastPlan()
    if (plan === null || (plan.young === 0 && plan.chainsHeld === 0)) return
    const now = publishNow().getTime()
    const due = Math.max(Date.parse(plan.at) + retention.pruneMarginSeconds * 1000 + SLACK_MS, retryAfterFailure ? now + RETRY_MS : 0)
    this.due = due
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (publishNow().getTime() < due) { this.arm(retryAfterFailure); return }
      this.running = this.count().finally(() => { this.running = undefined })
    }, Math.min(MAX_TIMER_MS, Math.max(0, due - now)))
    this.timer.unref()
  }

  /** The count in flight, if any: a prune must not run beside it (they share a work file). */
  async idle (): Promise<void> {
    await this.running
  }

  async stop (): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
    this.due = undefined
    await this.running
  }

  /** A dry run: never rejects; a failure is shown in status and tried again later. */
  private async count (): Promise<void> {
    const { repository, logger } = this.components
    const retention = repository.config.retention
    // A forget and prune running now counts afresh, and arms the next count when it ends.
    if (this.stopped || retention === undefined || this.components.busy()) return
    let ok = false
    try {
      const counted = await prune(repository, { marginMs: retention.pruneMarginSeconds * 1000, now: publishNow(), dryRun: true })
      this.failed = null
      ok = true
      logger.info({ wouldFree: counted.bytes, young: counted.young }, 'retention: counted what a prune would free')
    } catch (err) {
      this.failed = { at: new Date().toISOString(), message: (err as Error).message, code: codeOf(err) }
      logger.warn({ err }, 'retention: counting what a prune would free failed; tried again in an hour')
    }
    this.arm(!ok)
  }

  private lastPlan (): ReturnType<Repository['store']['retention']['prunePlan']> {
    try {
      return this.components.repository.store.retention.prunePlan()
    } catch {
      // sync.sqlite unreadable: status says so (stateFiles); nothing is counted meanwhile.
      return null
    }
  }
}
