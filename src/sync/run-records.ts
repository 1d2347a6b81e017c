import { CidsyncError, PointerUnreadableError, PublishHeldError } from '../errors.js'
import { Histogram } from '../util/histogram.js'
import type { Index } from '../index/index.js'
import type { Reconciled } from './reconcile.js'
import type { PublishRunState, ReconcileStatus } from './status.js'

// What status shows of the runner's jobs, kept apart from running them (runner.ts).

/** What status shows of the runner's publishes, apart from the scheduler's and the credentials' side. */
export type PublishRecordState = Pick<PublishRunState, 'lastError' | 'runs' | 'failures' | 'held' | 'pointerProblem' | 'durationsSeconds'>

/** A coded error's code, else null. */
export function codeOf (err: unknown): string | null {
  return err instanceof CidsyncError ? err.code : null
}

/**
 * The runner's record of its publishes for status: how many ran and failed, the last error, a
 * publish held for a drop (since when), a pointer that cannot be used, and how long they took.
 */
export class PublishRecord {
  private lastError: PublishRunState['lastError'] = null
  private runs = 0
  private failures = 0
  private held: PublishRunState['held'] = null
  private pointerProblem: string | null = null
  private readonly durations = new Histogram()

  started (): void {
    this.runs++
  }

  /** A publish went through: what it failed on before is over. */
  succeeded (ms: number): void {
    this.durations.observe(ms / 1000)
    this.lastError = null
    this.held = null
    this.pointerProblem = null
  }

  failed (err: unknown): void {
    this.failures++
    this.lastError = { at: new Date().toISOString(), message: (err as Error).message, code: codeOf(err) }
    if (err instanceof PublishHeldError) this.held = { since: this.held?.since ?? new Date().toISOString(), dropping: err.dropping, of: err.of, message: err.message }
    this.pointerProblem = err instanceof PointerUnreadableError ? err.message : null
  }

  state (): PublishRecordState {
    return { lastError: this.lastError, runs: this.runs, failures: this.failures, held: this.held, pointerProblem: this.pointerProblem, durationsSeconds: this.durations.snapshot() }
  }
}

/** The runner's record of its reconciliations for status: the last run, its result or error, and how long they took. */
export class ReconcileRecord {
  private last: Pick<ReconcileStatus, 'lastRun' | 'last' | 'lastError'> = { lastRun: null, last: null, lastError: null }
  private readonly durations = new Histogram()

  succeeded (result: Reconciled, ms: number): void {
    this.durations.observe(ms / 1000)
    this.last = { lastRun: new Date().toISOString(), last: result, lastError: null }
  }

  failed (err: unknown): void {
    this.last = { ...this.last, lastError: { at: new Date().toISOString(), message: (err as Error).message, code: codeOf(err) } }
  }

  /** With the account's side of this device's files as the index holds it now. */
  status (running: boolean, index: Index, deviceId: string): ReconcileStatus {
    const counts = index.remote.counts(deviceId)
    return {
      running,
      ...this.last,
      remoteFiles: counts.remoteFiles,
      gone: counts.gone,
      deals: { pending: counts.dealsPending, overdue: counts.dealsOverdue, made: counts.dealsMade },
      durationsSeconds: this.durations.snapshot()
    }
  }
}
