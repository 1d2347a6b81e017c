/** The slowest an answer may arrive once its grace is over: a trickle is given up, not waited on. */
export interface RateBound {
  /** Bytes per second, averaged from the answer's start (0 turns the bound off). */
  readonly minBytesPerSecond: number
  /** How long an answer may take before the rate counts: headers, slow starts, small answers. */
  readonly graceMs: number
}

export const DEFAULT_RATE_BOUND: RateBound = { minBytesPerSecond: 4096, graceMs: 30_000 }

/**
 * Watches the bytes of one answer as they arrive and calls `onSlow` once, when fewer have come
 * than `minBytesPerSecond` for every second past the grace. A timer checks, so a body that stops
 * altogether is caught as surely as one that trickles.
 */
export class RateGuard {
  private received = 0
  private readonly started = Date.now()
  private readonly timer: NodeJS.Timeout | undefined

  constructor (bound: RateBound, onSlow: (message: string) => void) {
    if (bound.minBytesPerSecond <= 0) return
    const everyMs = Math.max(25, Math.min(1000, bound.graceMs / 4))
    this.timer = setInterval(() => {
      const elapsed = Date.now() - this.started
      if (elapsed <= bound.graceMs || this.received >= bound.minBytesPerSecond * (elapsed - bound.graceMs) / 1000) return
      this.stop()
      onSlow(`the answer came slower than ${bound.minBytesPerSecond} bytes/s (${this.received} bytes in ${(elapsed / 1000).toFixed(1)} s): the service or the link is stalled; try again later`)
    }, everyMs)
    this.timer.unref()
  }

  /** Counts bytes that arrived. */
  add (bytes: number): void {
    this.received += bytes
  }

  stop (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
  }
}
