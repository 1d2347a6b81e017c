import { reclaimSpace, type ReclaimOptions, type ReclaimResult, type ReclaimTarget } from './reclaim.js'
import { ReclaimSchedule } from './reclaim-schedule.js'

/**
 * A service's reclaims: those asked for (in process, or by the admin route) and, when the service
 * was given a delay, those it runs on its own after deletes. Each run is owned here, so a stop
 * aborts it and waits for it to end before the database closes.
 */
export class ServiceReclaims {
  private readonly runs = new Set<Promise<ReclaimResult>>()
  private readonly stopping = new AbortController()
  private readonly schedule: ReclaimSchedule | undefined

  /** `afterDeleteMs`: run on its own that long after the last delete; unset: only when asked. */
  constructor (private readonly target: ReclaimTarget, afterDeleteMs: number | undefined, log: (line: string) => void) {
    this.schedule = afterDeleteMs === undefined ? undefined : new ReclaimSchedule(async signal => await this.run({ signal }), afterDeleteMs, log)
  }

  async run (options: ReclaimOptions = {}): Promise<ReclaimResult> {
    this.stopping.signal.throwIfAborted()
    const signal = options.signal === undefined ? this.stopping.signal : AbortSignal.any([options.signal, this.stopping.signal])
    const run = reclaimSpace(this.target, { ...options, signal })
    this.runs.add(run)
    try {
      return await run
    } finally {
      this.runs.delete(run)
    }
  }

  /** An upload was deleted: a run on its own is due, when the service runs them. */
  deleted (): void {
    this.schedule?.poke()
  }

  /** Whether no run of its own is due or under way. */
  get idle (): boolean {
    return this.schedule?.idle ?? true
  }

  async stop (): Promise<void> {
    this.stopping.abort()
    await this.schedule?.stop()
    await Promise.allSettled([...this.runs])
  }
}
