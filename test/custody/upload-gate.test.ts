import { describe, expect, it } from 'vitest'
import { Slots, TokenBucket, processUploadGate } from '../../src/custody/index.js'

describe('the upload gate', () => {
  it('holds takers together to the rate: two at once share one bucket', async () => {
    const bucket = new TokenBucket(1_000_000)
    const started = performance.now()
    const taker = async (): Promise<void> => { for (let i = 0; i < 10; i++) await bucket.take(100_000) }
    await Promise.all([taker(), taker()])
    // 2 MB at 1 MB/s with a one-second burst: at least a second, however busy the machine.
    expect(performance.now() - started).toBeGreaterThan(900)
  })

  it('runs at most its limit at once, and every task', async () => {
    const slots = new Slots(2)
    let now = 0
    let peak = 0
    const done = await Promise.all(Array.from({ length: 7 }, async (_, i) => await slots.run(async () => {
      now++
      peak = Math.max(peak, now)
      await new Promise(resolve => setTimeout(resolve, 20))
      now--
      return i
    })))
    expect(done).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(peak).toBe(2)
    expect(slots.peak).toBe(2)
  })

  it('is one per process, set to the latest limits', () => {
    const a = processUploadGate(0, 2)
    const b = processUploadGate(500, 4)
    expect(b).toBe(a)
  })

  it('lets a waiting task go when its signal aborts', async () => {
    const slots = new Slots(1)
    let release: () => void = () => {}
    const first = slots.run(async () => await new Promise<void>(resolve => { release = resolve }))
    const abort = new AbortController()
    const second = slots.run(async () => 'ran', abort.signal)
    abort.abort(new Error('stopped'))
    await expect(second).rejects.toThrow('stopped')
    release()
    await first
    expect(await slots.run(async () => 'after')).toBe('after')
  })
})
