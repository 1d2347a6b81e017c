import { backoffMs, type Backoff } from '../util/backoff.js'
import type { ReclaimResult } from './reclaim.js'

/** After a failed run, the next is tried this much later, doubling up to an hour. */
const RETRY: Omit<Backoff, 'firstMs'> = { maxMs: 60 * 60_000, jitter: 'spread' }

/**
 * Runs a reclaim on its own, `delayMs` after the last delete (each delete moves it on): deletes
 * made together cost one run. One run at a time; a delete during a run asks for another after it.
 * A failed run is said in `log`, and tried again after a back-off, doubling from `delayMs` up to
 * an hour. {@link stop} aborts a run under way and waits for it to end.
 */
export class ReclaimSchedule {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private again = false
  private failures = 0
  private readonly stopping = new AbortController()

  constructor (private readonly run: (signal: AbortSignal) => Promise<ReclaimResult>, private readonly delayMs: number, private readonly log: (line: string) => void) {}

  /** Something was deleted: a run is due `delayMs` from now. */
  poke (): void {
    if (this.stopping.signal.aborted) return
    if (this.running !== undefined) { this.again = true; return }
    this.arm(this.delayMs)
  }

  private arm (ms: number): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => { this.start() }, ms)
    // The service's server keeps the process alive; a timer alone must not.
    this.timer.unref()
  }

  private start (): void {
    this.timer = undefined
    this.again = false
    this.running = this.once().finally(() => {
      this.running = undefined
      if (this.stopping.signal.aborted) return
      if (this.failures > 0) this.arm(backoffMs({ ...RETRY, firstMs: Math.max(1_000, this.delayMs) }, this.failures))
      else if (this.again) this.arm(this.delayMs)
    })
  }

  private async once (): Promise<void> {
    try {
      const result = await this.run(this.stopping.signal)
      this.failures = 0
      if (result.blocksFreed > 0 || result.packsRemoved > 0 || result.uploadsForgotten > 0) {
        this.log(`reclaimed ${result.blocksFreed} blocks (${result.bytesFreed} bytes) of ${result.uploadsForgotten} deleted uploads; ` +
          `${result.packsRewritten} packs rewritten, ${result.packsRemoved} pack files removed, ${result.diskBytesFreed} bytes back on disk`)
      }
    } catch (err) {
      if (this.stopping.signal.aborted) return
      this.failures++
      this.log(`reclaiming space failed (${(err as { code?: string }).code ?? 'error'}): ${(err as Error).message}; trying again later`)
    }
  }

  /** Whether a run is due or under way (tests wait on it). */
  get idle (): boolean {
    return this.timer === undefined && this.running === undefined
  }

  async stop (): Promise<void> {
    this.stopping.abort()
    clearTimeout(this.timer)
    this.timer = undefined
    await this.running
  }
}
