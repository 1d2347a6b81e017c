/**
 * The limits every content upload of the process shares (`[content] upload_rate` and
 * `[content] concurrency`): one token bucket for the bytes, one set of slots for the requests,
 * whichever run (the daemon's background storing, a `snapshot` storing at its call) sends them.
 */

function sleep (ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) { reject(signal.reason as Error); return }
    const timer = setTimeout(() => { signal?.removeEventListener('abort', stop); resolve() }, ms)
    const stop = (): void => { clearTimeout(timer); reject(signal?.reason as Error) }
    signal?.addEventListener('abort', stop, { once: true })
  })
}

/**
 * `rate` bytes a second on average, bursting to one second's worth. A taker that overdraws waits
 * until the bucket has refilled past its debt, so however many take at once, the bytes released
 * by time t never exceed one second's worth plus rate × t. Rate 0: no limit.
 */
export class TokenBucket {
  private tokens: number
  private last = performance.now()

  constructor (private rate: number) {
    this.tokens = rate
  }

  /** A new rate from a reloaded config; the debt already taken stands. */
  setRate (rate: number): void {
    if (rate === this.rate) return
    this.rate = rate
    this.tokens = Math.min(this.tokens, rate)
  }

  /** Waits until `bytes` may go. */
  async take (bytes: number, signal?: AbortSignal): Promise<void> {
    if (this.rate <= 0) return
    const now = performance.now()
    this.tokens = Math.min(this.rate, this.tokens + (now - this.last) / 1000 * this.rate)
    this.last = now
    this.tokens -= bytes
    if (this.tokens < 0) await sleep(-this.tokens / this.rate * 1000, signal)
  }
}

/** At most `limit` tasks at once; the rest wait their turn, in order. */
export class Slots {
  private running = 0
  private readonly waiting: Array<() => void> = []
  /** The most that ever ran at once (for tests and status). */
  peak = 0

  constructor (private limit: number) {}

  setLimit (limit: number): void {
    this.limit = limit
    while (this.running < this.limit && this.waiting.length > 0) { this.running++; (this.waiting.shift() as () => void)() }
  }

  async run<T> (task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.running >= this.limit) {
      await new Promise<void>((resolve, reject) => {
        const turn = (): void => { signal?.removeEventListener('abort', stop); resolve() }
        const stop = (): void => {
          const at = this.waiting.indexOf(turn)
          if (at >= 0) this.waiting.splice(at, 1)
          reject(signal?.reason as Error)
        }
        if (signal?.aborted === true) { reject(signal.reason as Error); return }
        signal?.addEventListener('abort', stop, { once: true })
        this.waiting.push(turn)
      })
    } else {
      this.running++
    }
    this.peak = Math.max(this.peak, this.running)
    try {
      return await task()
    } finally {
      const next = this.waiting.shift()
      if (next !== undefined) next() // the slot passes straight on
      else this.running--
    }
  }
}

/** The rate and concurrency limits of content uploads. */
export interface UploadGate {
  readonly bucket: TokenBucket
  readonly slots: Slots
}

let shared: UploadGate | undefined

/**
 * The process's gate, set to the latest config's limits (`rate` bytes a second, 0 unlimited;
 * `concurrency` uploads at once): every storing run of the process goes through the same one.
 */
export function processUploadGate (rate: number, concurrency: number): UploadGate {
  shared ??= { bucket: new TokenBucket(rate), slots: new Slots(concurrency) }
  shared.bucket.setRate(rate)
  shared.slots.setLimit(concurrency)
  return shared
}
