import { describe, expect, it, onTestFinished } from 'vitest'
import { publishNow, systemClock, TEST_CLOCK_VARIABLE, type Clock } from '../../src/util/clock.js'

describe('the publish clock', () => {
  it('starts where CIDSYNC_TEST_CLOCK says, read once, and runs on at the real rate', () => {
    const saved = process.env[TEST_CLOCK_VARIABLE]
    onTestFinished(() => { if (saved === undefined) delete process.env[TEST_CLOCK_VARIABLE]; else process.env[TEST_CLOCK_VARIABLE] = saved })
    process.env[TEST_CLOCK_VARIABLE] = '2026-01-01T08:00:00.000Z'
    const first = publishNow().getTime()
    // Read once: a later change of the variable does not move this process's clock.
    process.env[TEST_CLOCK_VARIABLE] = '2030-01-01T00:00:00.000Z'
    const second = publishNow().getTime()
    const start = Date.parse('2026-01-01T08:00:00.000Z')
    expect(first).toBeGreaterThanOrEqual(start)
    expect(first).toBeLessThan(start + 60_000)
    expect(second).toBeGreaterThanOrEqual(first)
    expect(second).toBeLessThan(start + 60_000)
  })

  it('reads a clock it is given instead: a test moves time without sleeping', () => {
    let at = Date.parse('2020-05-01T00:00:00.000Z')
    const clock: Clock = { now: () => at }
    expect(publishNow(clock).toISOString()).toBe('2020-05-01T00:00:00.000Z')
    at += 3_600_000
    expect(publishNow(clock).toISOString()).toBe('2020-05-01T01:00:00.000Z')
    expect(Math.abs(systemClock.now() - publishNow().getTime())).toBeLessThan(60_000)
  })
})
