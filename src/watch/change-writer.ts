import type { EntryChange, EntryStore } from '../index/index.js'
import { IndexWriteError, IndexWriteFatalError } from '../errors.js'
import { backoffMs } from '../util/backoff.js'
import type { WatchEventListener } from './watch-event.js'

export const DEFAULT_FLUSH_MS = 250
/** Changes a transaction at most: 500 rows commit in about a millisecond and die young (5,000 lived long enough to be copied). */
export const DEFAULT_MAX_BATCH = 500
/** After a failed write: wait this long, doubling each time, up to {@link DEFAULT_RETRY_MAX_MS}. */
export const DEFAULT_RETRY_MIN_MS = 250
export const DEFAULT_RETRY_MAX_MS = 30_000
/**
 * Changes held while writes fail. Past this the daemon stops rather than grow without bound;
 * nothing is lost, the next start's scan finds every change not written.
 */
export const DEFAULT_MAX_PENDING = 1_000_000
/** A damaged database is tried this many times (a read can fail once on a torn page) before giving up. */
const DAMAGED_ATTEMPTS = 3

export interface ChangeWriterInit {
  readonly flushMs?: number
  readonly maxBatch?: number
  readonly retryMinMs?: number
  readonly retryMaxMs?: number
  readonly maxPending?: number
  /** Told of each commit that changed rows, of each write that failed, and once when writing cannot go on. */
  readonly onProgress?: WatchEventListener
}

/** Where writing stands, for /status. */
export interface WriterState {
  /** `retrying`: the last write failed and is tried again at `retryAt`; `stopped`: given up. */
  readonly state: 'ok' | 'retrying' | 'stopped'
  /** Changes gathered and not yet committed. */
  readonly pending: number
  /** Failed attempts in a row. */
  readonly attempts: number
  readonly retryAt: number | undefined
  readonly lastError: { readonly at: number, readonly code: string, readonly message: string } | undefined
}

/**
 * Gathers index writes and commits them in one transaction per batch: a burst of 100,000 files
 * is a few dozen commits, not 100,000. Within a batch a later change to a path replaces an earlier one.
 * A failed write (a full disk, a read-only file) never throws out of a timer: the batch is kept,
 * later changes merge into it, and it is written again after a bounded exponential back-off.
 */
export class ChangeWriter {
  private batch = new Map<string, EntryChange>()
  private timer: NodeJS.Timeout | undefined
  private readonly flushMs: number
  private readonly maxBatch: number
  private attempts = 0
  private retryAt: number | undefined
  private lastError: WriterState['lastError']
  private stopped = false
  /** Reads or writes in a row that found the database damaged. */
  private damagedSeen = 0
  private drainWaiters: Array<() => void> = []

  constructor (private readonly entries: EntryStore, private readonly deviceId: string, private readonly init: ChangeWriterInit = {}) {
    this.flushMs = init.flushMs ?? DEFAULT_FLUSH_MS
    this.maxBatch = init.maxBatch ?? DEFAULT_MAX_BATCH
  }

  get pending (): number {
    return this.batch.size
  }

  /** The change to a path gathered and not yet committed, if any: what its row is about to become. */
  pendingFor (folder: string, path: string): EntryChange | undefined {
    return this.batch.get(`${folder}\0${path}`)
  }

  state (): WriterState {
    return {
      state: this.stopped ? 'stopped' : this.attempts > 0 ? 'retrying' : 'ok',
      pending: this.batch.size,
      attempts: this.attempts,
      retryAt: this.retryAt,
      lastError: this.lastError
    }
  }

  write (change: EntryChange): void {
    // Given up: the process is stopping, and the next start's scan finds this change again.
    if (this.stopped) return
    this.batch.set(`${change.folder}\0${change.path}`, change)
    if (this.attempts > 0) {
      // The retry timer owns the next attempt; only a batch grown past its bound ends the wait.
      if (this.batch.size > (this.init.maxPending ?? DEFAULT_MAX_PENDING)) this.giveUp(`${this.batch.size} changes are waiting to be written`)
      return
    }
    if (this.batch.size >= this.maxBatch) this.flush()
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs)
  }

  /**
   * Commits what is gathered now. Answers the rows changed (0 when the write failed: it is
   * retried). While backing off after a failure it waits for its retry instead of hammering.
   */
  flush (): number {
    if (this.retryAt !== undefined && Date.now() < this.retryAt) return 0
    return this.commit()
  }

  private commit (): number {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.stopped) return 0
    if (this.batch.size === 0) {
      this.wakeDrained()
      return 0
    }
    const batch = this.batch
    this.batch = new Map()
    let written: number
    try {
      written = this.entries.apply(this.deviceId, [...batch.values()])
    } catch (err) {
      // Keep the batch; anything newer for the same path replaces it.
      for (const [key, change] of this.batch) batch.set(key, change)
      this.batch = batch
      this.failed(err as Error)
      return 0
    }
    this.attempts = 0
    this.damagedSeen = 0
    this.retryAt = undefined
    if (written > 0) this.init.onProgress?.({ type: 'index.committed', rows: written })
    if (this.batch.size > 0) this.timer ??= setTimeout(() => this.flush(), this.flushMs)
    else this.wakeDrained()
    return written
  }

  /** Resolves once nothing is waiting to be written (or writing has given up or been closed). */
  async drained (): Promise<void> {
    if (this.batch.size === 0 || this.stopped) return
    await new Promise<void>(resolve => this.drainWaiters.push(resolve))
  }

  /** A last write, then no more: answers how many changes could not be written (the next start's scan finds them). */
  close (): number {
    const unwritten = this.stopped ? this.batch.size : (this.commit(), this.batch.size)
    clearTimeout(this.timer)
    this.timer = undefined
    this.stopped = true
    this.wakeDrained()
    return unwritten
  }

  /**
   * A read of the index failed where the watch room looks a row up: counted and shown like a
   * failed write, and a damaged database stops writing the same way.
   */
  readFailed (cause: Error): void {
    if (this.stopped) return
    const error = this.noteError(cause)
    if (error.damaged && ++this.damagedSeen >= DAMAGED_ATTEMPTS) this.giveUp('the index is damaged', error)
  }

  private noteError (cause: Error): IndexWriteError {
    const sqliteCode = (cause as { code?: unknown }).code
    const error = new IndexWriteError(this.entries.path, typeof sqliteCode === 'string' ? sqliteCode : 'ERR_UNKNOWN', this.batch.size, { cause })
    this.lastError = { at: Date.now(), code: error.sqliteCode, message: error.message }
    this.init.onProgress?.({ type: 'index.write-failed', error, pending: this.batch.size })
    return error
  }

  private failed (cause: Error): void {
    this.attempts++
    const error = this.noteError(cause)
    if (error.damaged && ++this.damagedSeen >= DAMAGED_ATTEMPTS) {
      this.giveUp('the index is damaged', error)
      return
    }
    // A batch that was already past its bound when its first write failed (it all arrived at once)
    // has no later change to notice it: the bound holds here too.
    if (this.batch.size > (this.init.maxPending ?? DEFAULT_MAX_PENDING)) {
      this.giveUp(`${this.batch.size} changes are waiting to be written`, error)
      return
    }
    const delay = backoffMs({ firstMs: this.init.retryMinMs ?? DEFAULT_RETRY_MIN_MS, maxMs: this.init.retryMaxMs ?? DEFAULT_RETRY_MAX_MS, jitter: 'none' }, this.attempts)
    this.retryAt = Date.now() + delay
    clearTimeout(this.timer)
    this.timer = setTimeout(() => this.commit(), delay)
  }

  private giveUp (why: string, last?: IndexWriteError): void {
    if (this.stopped) return
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
    this.retryAt = undefined
    const error = last ?? new IndexWriteError(this.entries.path, this.lastError?.code ?? 'ERR_UNKNOWN', this.batch.size)
    this.wakeDrained()
    this.init.onProgress?.({ type: 'index.fatal', error: new IndexWriteFatalError(error, why) })
  }

  private wakeDrained (): void {
    const waiters = this.drainWaiters
    this.drainWaiters = []
    for (const wake of waiters) wake()
  }
}
