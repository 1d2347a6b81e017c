/**
 * How long to wait after failures in a row, the one way cidsync computes it: doubling from
 * `firstMs` up to `maxMs`, with jitter so that many waiters (devices on one service, files in one
 * folder) do not retry in step. `full`: anywhere from 0 to the cap (requests to a service under
 * load); `spread`: within 20% of it (a schedule that should keep its pace); `none`: exactly it
 * (a local resource, where the time shown in status should be the time it happens).
 */
export interface Backoff {
  readonly firstMs: number
  readonly maxMs: number
  readonly jitter?: 'full' | 'spread' | 'none'
}

/** The wait after `failures` failures in a row (1 for the first). */
export function backoffMs (policy: Backoff, failures: number, random = Math.random): number {
  const cap = Math.min(policy.maxMs, policy.firstMs * 2 ** Math.min(30, Math.max(0, failures - 1)))
  switch (policy.jitter ?? 'spread') {
    case 'full': return Math.round(random() * cap)
    case 'spread': return Math.round(cap * (0.8 + random() * 0.4))
    case 'none': return cap
  }
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export async function sleep (ms: number, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted()
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve() }, ms)
    const onAbort = (): void => { clearTimeout(timer); reject(signal?.reason as Error) }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
