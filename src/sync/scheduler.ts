import cron, { type ScheduledTask } from 'node-cron'
import { backoffMs } from '../util/backoff.js'
import { NotReadyError } from '../errors.js'

/** When a job runs by itself; read again at each change noted and at {@link Scheduler.restart}. */
export interface ScheduleTiming {
  /** A cron expression (node-cron). */
  readonly cron: string
  /** After a change, wait until nothing changed for this long... */
  readonly quietMs?: number
  /** ...and at least this long after the last successful run. */
  readonly minIntervalMs?: number
}

export interface RetryPolicy {
  /** The first wait after a failure, and the longest (the wait doubles with each failure in a row, ±20 % jitter). */
  readonly firstMs: number
  readonly maxMs: number
  /** False for a failure waiting cannot mend (a refused credential, a held publish): no retry is set. */
  readonly retryable: (err: unknown) => boolean
}

export interface SchedulerInit<T, O> {
  readonly timing: () => ScheduleTiming
  /** The job. `reason` says what started it: `schedule`, `changes`, `retry`, `queued`, or the caller's. */
  readonly run: (reason: string, options: O | undefined) => Promise<T>
  /** Throws when a run cannot start now: that throw is neither a failure nor retried. */
  readonly ready?: () => void
  /**
   * A request while a run is in flight: `rerun` waits for it and then runs once more (one rerun
   * for all requests that came meanwhile), so what changed during the run is covered; a request
   * with options waits for a run of its own instead. `join` answers the run in flight.
   */
  readonly whenBusy: 'rerun' | 'join'
  readonly retry?: RetryPolicy
}

/**
 * Runs one job: on a cron schedule, after changes (debounced), on request, and again after a
 * failure (backing off). Single flight: never two runs at once. Knows nothing of what the job does.
 */
export class Scheduler<T, O = undefined> {
  private task: ScheduledTask | undefined
  private running: Promise<T> | undefined
  private again = false
  private stopped = false
  private debounce: NodeJS.Timeout | undefined
  private pending: number | undefined
  private lastChangeAt = 0
  private lastRunAt = 0
  private consecutiveFailures = 0
  private retryTimer: NodeJS.Timeout | undefined
  private retryDue: number | undefined

  constructor (private readonly init: SchedulerInit<T, O>) {}

  /** Whether a run is in flight. */
  get busy (): boolean {
    return this.running !== undefined
  }

  /** When the run after noted changes is due, if one is. */
  get pendingAt (): number | undefined {
    return this.pending
  }

  /** When the run after a failure is due, if one is. */
  get retryAt (): number | undefined {
    return this.retryDue
  }

  start (): void {
    if (this.stopped) return
    const expression = this.init.timing().cron
    // No schedule: the job runs on request (and after changes, if noted) only.
    if (expression === '') return
    this.task = cron.schedule(expression, () => { void this.runNow('schedule').catch(() => {}) })
  }

  /** The timing changed: the cron schedule starts again from it (the debounce reads it at each change). */
  async restart (): Promise<void> {
    await this.task?.stop()
    this.task = undefined
    this.start()
  }

  /** Something changed: run once things are quiet, and not sooner than the minimum interval after the last run. */
  noteChange (): void {
    if (this.stopped) return
    const { quietMs = 0, minIntervalMs = 0 } = this.init.timing()
    this.lastChangeAt = Date.now()
    const due = Math.max(this.lastChangeAt + quietMs, this.lastRunAt + minIntervalMs)
    clearTimeout(this.debounce)
    this.pending = due
    this.debounce = setTimeout(() => {
      this.pending = undefined
      this.runNow('changes').catch((err: unknown) => {
        // Not ready yet (the service not reached after a restart): the change is kept and noted
        // again, never dropped until some later schedule happens to cover it.
        if (err instanceof NotReadyError && !this.stopped) setTimeout(() => { this.noteChange() }, err.retryAfterSeconds * 1000).unref()
      })
    }, Math.max(0, due - Date.now()))
    this.debounce.unref()
  }

  /** Runs now, or as `whenBusy` says when a run is in flight; answers the run's result. */
  async runNow (reason = 'request', options?: O): Promise<T> {
    if (this.running !== undefined) {
      if (this.init.whenBusy === 'join') return await this.running
      if (options === undefined) {
        this.again = true
        await this.running.catch(() => undefined)
        if (this.running !== undefined) return await this.running
      } else {
        // Asked with options (labels, a confirmed drop): a run of its own, or they would be lost
        // in one started without them. Each wait is one run's end, and runs only start when asked.
        while (this.running !== undefined) await this.running.catch(() => undefined)
      }
    }
    this.again = false
    this.running = this.run(reason, options)
    try {
      return await this.running
    } finally {
      this.running = undefined
      if (this.again && !this.stopped) void this.runNow('queued').catch(() => {})
    }
  }

  /** No more runs: the schedule and timers stop; resolves once the run in flight is over. */
  async stop (): Promise<void> {
    this.stopped = true
    await this.task?.stop()
    clearTimeout(this.debounce)
    clearTimeout(this.retryTimer)
    await this.running?.catch(() => undefined)
  }

  private async run (reason: string, options: O | undefined): Promise<T> {
    this.init.ready?.()
    const started = Date.now()
    try {
      const result = await this.init.run(reason, options)
      this.lastRunAt = Date.now()
      this.consecutiveFailures = 0
      clearTimeout(this.retryTimer)
      this.retryDue = undefined
      // Changes noted before this run began are covered by it: nothing is pending for them.
      if (this.pending !== undefined && this.lastChangeAt <= started) {
        clearTimeout(this.debounce)
        this.pending = undefined
      }
      return result
    } catch (err) {
      this.consecutiveFailures++
      this.scheduleRetry(err)
      throw err
    }
  }

  /**
   * After a failure: try again after a wait that doubles with each failure in a row (with
   * jitter), like Syncthing's pull loop, so a transient outage never stops the job for good.
   */
  private scheduleRetry (err: unknown): void {
    clearTimeout(this.retryTimer)
    this.retryDue = undefined
    const policy = this.init.retry
    if (policy === undefined || this.stopped || !policy.retryable(err)) return
    const delay = backoffMs({ firstMs: policy.firstMs, maxMs: policy.maxMs, jitter: 'spread' }, this.consecutiveFailures)
    this.retryDue = Date.now() + delay
    this.retryTimer = setTimeout(() => {
      this.retryDue = undefined
      void this.runNow('retry').catch(() => {})
    }, delay)
    this.retryTimer.unref()
  }
}
