import { describe, expect, it } from 'vitest'
import { backoffMs, sleep } from '../../src/util/backoff.js'

describe('backoff', () => {
  it('doubles from the first wait up to the cap, with the jitter asked for', () => {
    const exact = { firstMs: 100, maxMs: 1000, jitter: 'none' } as const
    expect([1, 2, 3, 4, 5, 60].map(n => backoffMs(exact, n))).toEqual([100, 200, 400, 800, 1000, 1000])
    expect(backoffMs({ ...exact, jitter: 'full' }, 3, () => 0.5)).toBe(200)
    expect(backoffMs({ ...exact, jitter: 'full' }, 3, () => 0)).toBe(0)
    expect(backoffMs({ ...exact, jitter: 'spread' }, 3, () => 0)).toBe(320)
    expect(backoffMs({ ...exact, jitter: 'spread' }, 3, () => 0.999)).toBeLessThanOrEqual(480)
    // A failure count past any sane number neither overflows nor goes past the cap.
    expect(backoffMs(exact, 10_000)).toBe(1000)
  })

  it('sleeps until aborted, and rejects with the reason', async () => {
    const controller = new AbortController()
    const slept = sleep(60_000, controller.signal)
    controller.abort(new Error('stopping'))
    await expect(slept).rejects.toThrow('stopping')
    await expect(sleep(10, AbortSignal.abort(new Error('already')))).rejects.toThrow('already')
    await expect(sleep(1)).resolves.toBeUndefined()
  })
})
