import { setV8Flag } from './v8-flags.js'
import { runInNewContext } from 'node:vm'

let gc: (() => void) | undefined

/**
 * Runs a full garbage collection now. After the startup scan the heap holds much garbage, and an
 * idle daemon allocates nothing, so V8 would keep it for a long while. One collection at the end of
 * a burst gives it back at once.
 */
export function releaseMemory (): void {
  try {
    if (gc === undefined) {
      // The documented way to reach gc() without starting node with --expose-gc.
      setV8Flag('--expose-gc')
      gc = runInNewContext('gc') as () => void
    }
    gc()
  } catch {
    // Not available on this runtime: V8's own memory reducer gets there later.
  }
}

/**
 * A full collection once every `bytes` of work noted: for a loop whose reads leave buffers outside
 * V8's heap. V8 counts that memory loosely and takes it late, so a long loop's peak grew with it.
 */
export class CollectEvery {
  private since = 0
  /** `bytes`: the step; a collection costs a few ms, so a step of reads worth far more. */
  constructor (private readonly bytes = 64 * 1024 * 1024) {}

  /** Notes `bytes` more done; collects once they pass the step. */
  note (bytes: number): void {
    this.since += bytes
    if (this.since < this.bytes) return
    this.since = 0
    releaseMemory()
  }
}
