import { describe, expect, it } from 'vitest'
import { CollectEvery } from '../../src/util/release-memory.js'

/** Buffers outside V8's heap, dropped at once: garbage V8 takes only at its next full collection. */
function dropBuffers (count: number, bytes: number): void {
  for (let i = 0; i < count; i++) new Uint8Array(bytes).fill(1)
}

describe('a full collection every so many bytes', () => {
  it('takes the garbage once the work noted passes the step, and not before', () => {
    const collect = new CollectEvery(64 * 1024 * 1024)
    // A first collection, so what follows starts from little.
    collect.note(64 * 1024 * 1024)
    const before = process.memoryUsage().arrayBuffers
    dropBuffers(8, 4 * 1024 * 1024)
    collect.note(32 * 1024 * 1024)
    // Below the step: nothing collected, the dropped buffers still counted (young ones may go, old ones stay).
    const held = process.memoryUsage().arrayBuffers
    collect.note(32 * 1024 * 1024)
    const after = process.memoryUsage().arrayBuffers
    expect(after).toBeLessThan(before + 8 * 1024 * 1024)
    expect(after).toBeLessThanOrEqual(held)
  })
})
