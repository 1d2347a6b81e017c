import { describe, expect, it } from 'vitest'
import { ReadAhead } from '../../src/util/read-ahead.js'

/** A promise and its resolvers, for work the test ends by hand. */
function gate<T> (): { promise: Promise<T>, resolve: (value: T) => void, reject: (err: Error) => void } {
  let resolve!: (value: T) => void
  let reject!: (err: Error) => void
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej })
  return { promise, resolve, reject }
}

describe('ReadAhead', () => {
  it('answers in order, with at most `ahead` started and not taken', async () => {
    const gates = [0, 1, 2, 3, 4].map(() => gate<number>())
    const started: number[] = []
    const reads = new ReadAhead([0, 1, 2, 3, 4], 2, async (i: number) => { started.push(i); return await gates[i]!.promise })
    const first = reads.next()
    // The first is taken, and the two after it started.
    expect(started).toEqual([0, 1, 2])
    gates[2]!.resolve(2)
    gates[0]!.resolve(0)
    await expect(first).resolves.toBe(0)
    gates[1]!.resolve(1)
    await expect(reads.next()).resolves.toBe(1)
    expect(started).toEqual([0, 1, 2, 3])
    await expect(reads.next()).resolves.toBe(2)
    gates[3]!.resolve(3)
    gates[4]!.resolve(4)
    await expect(reads.next()).resolves.toBe(3)
    await expect(reads.next()).resolves.toBe(4)
    await expect(reads.next()).rejects.toThrow(RangeError)
  })

  it('throws a failure ahead of its turn only when it is taken, and settle waits for the rest', async () => {
    const gates = [0, 1, 2].map(() => gate<number>())
    const reads = new ReadAhead([0, 1, 2], 3, async (i: number) => await gates[i]!.promise)
    const first = reads.next()
    // Fails before anyone takes it: no unhandled rejection.
    gates[1]!.reject(new Error('the second failed'))
    await new Promise(resolve => setImmediate(resolve))
    gates[0]!.resolve(0)
    await expect(first).resolves.toBe(0)
    await expect(reads.next()).rejects.toThrow('the second failed')
    let settled = false
    const settling = reads.settle().then(() => { settled = true })
    await new Promise(resolve => setImmediate(resolve))
    expect(settled).toBe(false)
    gates[2]!.reject(new Error('the third failed too'))
    await settling
    expect(settled).toBe(true)
  })
})
