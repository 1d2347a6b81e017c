import { afterEach, describe, it, expect, vi } from 'vitest'
import { Scheduler, type SchedulerInit } from '../../src/sync/index.js'

/** A job whose runs the test ends by hand. */
function manualJob (): { run: SchedulerInit<number, undefined>['run'], reasons: string[], finish: (err?: Error) => void } {
  const reasons: string[] = []
  const waiting: Array<{ resolve: (n: number) => void, reject: (e: Error) => void }> = []
  return {
    reasons,
    run: async (reason) => {
      reasons.push(reason)
      return await new Promise<number>((resolve, reject) => waiting.push({ resolve, reject }))
    },
    finish: (err) => {
      const next = waiting.shift()
      if (next === undefined) throw new Error('no run is waiting')
      if (err === undefined) next.resolve(reasons.length)
      else next.reject(err)
    }
  }
}

const NEVER = '0 0 1 1 *'
const schedulers: Array<Scheduler<unknown, unknown>> = []
function scheduler<T> (init: Partial<SchedulerInit<T, undefined>> & Pick<SchedulerInit<T, undefined>, 'run'>): Scheduler<T> {
  const made = new Scheduler<T>({ timing: () => ({ cron: NEVER }), whenBusy: 'rerun', ...init })
  schedulers.push(made as Scheduler<unknown, unknown>)
  return made
}

afterEach(async () => {
  vi.useRealTimers()
  for (const s of schedulers.splice(0)) await s.stop()
})

describe('the scheduler', () => {
  it('runs one at a time: requests during a run share one rerun after it', async () => {
    const job = manualJob()
    const s = scheduler({ run: job.run })
    const first = s.runNow('a')
    await Promise.resolve()
    expect(s.busy).toBe(true)
    const second = s.runNow('b')
    const third = s.runNow('c')
    job.finish()
    expect(await first).toBe(1)
    await vi.waitFor(() => { expect(job.reasons).toEqual(['a', 'queued']) })
    job.finish()
    expect(await second).toBe(2)
    expect(await third).toBe(2)
    expect(s.busy).toBe(false)
  })

  it('gives a request with options a run of its own, after the shared rerun, with its options', async () => {
    const seen: Array<{ reason: string, options: string | undefined }> = []
    const waiting: Array<() => void> = []
    const s = new Scheduler<number, string>({
      timing: () => ({ cron: NEVER }),
      whenBusy: 'rerun',
      run: async (reason, options) => {
        seen.push({ reason, options })
        await new Promise<void>(resolve => waiting.push(resolve))
        return seen.length
      }
    })
    schedulers.push(s as Scheduler<unknown, unknown>)
    const first = s.runNow('a')
    const plain = s.runNow('b')
    const labelled = s.runNow('c', 'keep me')
    waiting.shift()?.()
    expect(await first).toBe(1)
    await vi.waitFor(() => { expect(seen.length).toBe(2) })
    waiting.shift()?.()
    expect(await plain).toBe(2)
    await vi.waitFor(() => { expect(seen.length).toBe(3) })
    waiting.shift()?.()
    expect(await labelled).toBe(3)
    expect(seen).toEqual([{ reason: 'a', options: undefined }, { reason: 'queued', options: undefined }, { reason: 'c', options: 'keep me' }])
  })

  it('joins the run in flight when told to', async () => {
    const job = manualJob()
    const s = scheduler({ run: job.run, whenBusy: 'join' })
    const first = s.runNow('a')
    const second = s.runNow('b')
    job.finish()
    expect(await first).toBe(1)
    expect(await second).toBe(1)
    expect(job.reasons).toEqual(['a'])
  })

  it('debounces changes: quiet after the last one, and not sooner than the minimum interval after a run', async () => {
    vi.useFakeTimers({ now: 100_000 })
    const runs: string[] = []
    const s = scheduler({ run: async (reason) => { runs.push(reason); return 0 }, timing: () => ({ cron: NEVER, quietMs: 1_000, minIntervalMs: 10_000 }) })
    s.noteChange()
    await vi.advanceTimersByTimeAsync(900)
    s.noteChange()
    expect(s.pendingAt).toBe(101_900)
    await vi.advanceTimersByTimeAsync(999)
    expect(runs).toEqual([])
    await vi.advanceTimersByTimeAsync(1)
    expect(runs).toEqual(['changes'])
    expect(s.pendingAt).toBeUndefined()
    s.noteChange()
    expect(s.pendingAt).toBe(101_900 + 10_000)
    await vi.advanceTimersByTimeAsync(10_000)
    expect(runs).toEqual(['changes', 'changes'])
  })

  it('a run clears what was pending from changes noted before it began', async () => {
    vi.useFakeTimers({ now: 0 })
    const s = scheduler({ run: async () => 0, timing: () => ({ cron: NEVER, quietMs: 5_000 }) })
    s.noteChange()
    expect(s.pendingAt).toBe(5_000)
    await s.runNow()
    expect(s.pendingAt).toBeUndefined()
  })

  it('retries after a wait that doubles with each failure in a row, not for what waiting cannot mend, and resets on success', async () => {
    vi.useFakeTimers({ now: 0 })
    vi.spyOn(Math, 'random').mockReturnValue(0.5)
    let fail: Error | undefined = new Error('down')
    const runs: string[] = []
    const s = scheduler({
      run: async (reason) => { runs.push(reason); if (fail !== undefined) throw fail; return 0 },
      retry: { firstMs: 1_000, maxMs: 3_000, retryable: (err) => (err as Error).message !== 'held' }
    })
    await expect(s.runNow()).rejects.toThrow('down')
    expect(s.retryAt).toBe(1_000)
    await vi.advanceTimersByTimeAsync(1_000)
    expect(runs).toEqual(['request', 'retry'])
    expect(s.retryAt).toBe(1_000 + 2_000)
    await vi.advanceTimersByTimeAsync(2_000)
    expect(s.retryAt).toBe(3_000 + 3_000)
    fail = undefined
    await vi.advanceTimersByTimeAsync(3_000)
    expect(runs).toEqual(['request', 'retry', 'retry', 'retry'])
    expect(s.retryAt).toBeUndefined()
    fail = new Error('held')
    await expect(s.runNow()).rejects.toThrow('held')
    expect(s.retryAt).toBeUndefined()
  })

  it('a run that is not ready to start is neither counted nor retried', async () => {
    vi.useFakeTimers({ now: 0 })
    const runs: string[] = []
    let ready = false
    const s = scheduler({
      ready: () => { if (!ready) throw new Error('not yet') },
      run: async (reason) => { runs.push(reason); return 0 },
      retry: { firstMs: 1_000, maxMs: 1_000, retryable: () => true }
    })
    await expect(s.runNow()).rejects.toThrow('not yet')
    expect(s.retryAt).toBeUndefined()
    ready = true
    await s.runNow()
    expect(runs).toEqual(['request'])
  })

  it('runs on its cron schedule, restarts it with new timing, and stops', async () => {
    const runs: string[] = []
    let cron = '* * * * * *'
    const s = scheduler({ run: async (reason) => { runs.push(reason); return 0 }, timing: () => ({ cron }) })
    s.start()
    await vi.waitFor(() => { expect(runs).toContain('schedule') }, { timeout: 12_000 })
    cron = NEVER
    await s.restart()
    const seen = runs.length
    await new Promise(resolve => setTimeout(resolve, 1_300))
    expect(runs.length).toBe(seen)
    await s.stop()
    s.noteChange()
    expect(s.pendingAt).toBeUndefined()
  })
})

describe('a change noted while not ready', () => {
  it('is noted again after Retry-After, not dropped (storing after a restart, before the service is reached)', async () => {
    vi.useFakeTimers()
    try {
      const { NotReadyError } = await import('../../src/errors.js')
      let ready = false
      const job = manualJob()
      const s = scheduler({ timing: () => ({ cron: NEVER, quietMs: 100 }), ready: () => { if (!ready) throw new NotReadyError('not ready: the service', 2) }, run: job.run })
      s.start()
      s.noteChange()
      await vi.advanceTimersByTimeAsync(150)
      expect(job.reasons).toEqual([])
      ready = true
      await vi.advanceTimersByTimeAsync(2_200)
      expect(job.reasons).toEqual(['changes'])
      job.finish()
    } finally {
      vi.useRealTimers()
    }
  })
})
