/**
 * Every bound a test waits with is multiplied by this (`CIDSYNC_TEST_WAIT_SCALE`, default 4): a
 * bound says when to give up on something that should happen, so it is generous, and a busy machine
 * (the suite beside two CPU hogs) only makes a passing test slower, never a failing one.
 */
export const WAIT_SCALE = Math.max(1, Number(process.env.CIDSYNC_TEST_WAIT_SCALE ?? 4) || 4)

/** `ms` as a bound to give up at: {@link WAIT_SCALE} times longer. */
export function bound (ms: number): number {
  return ms * WAIT_SCALE
}

/** Races a promise against a deadline, so a test that would hang fails with a name instead. */
export async function within<T> (promise: Promise<T>, unscaledMs: number, what: string): Promise<T> {
  const ms = bound(unscaledMs)
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
  })
  try {
    return await Promise.race([promise, deadline])
  } finally {
    clearTimeout(timer)
  }
}

/** Polls `check` until it answers something other than undefined, or fails after `ms`. */
export async function until<T> (check: () => T | undefined | Promise<T | undefined>, unscaledMs: number, what: string, everyMs = 25): Promise<T> {
  const ms = bound(unscaledMs)
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, everyMs))
  }
}
