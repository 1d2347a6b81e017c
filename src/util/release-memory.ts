import { setV8Flag } from './v8-flags.js'
import { runInNewContext } from 'node:vm'
import { getHeapStatistics } from 'node:v8'

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

/**
 * Lets V8's heap grow to half again what is live after a collection, not up to four times it. A
 * restore of many files promotes much short-lived garbage (a file's job lives through its batch's
 * fsync), and V8 let it pile up to several times the live set before collecting it. The young
 * generation stays at the size it has: grown, it is held to the end of the run, and a restore's
 * garbage costs about as much to scavenge in a small one. Once per process, for the commands that
 * bring many files back, before they read anything. A daemon's restore drill sets it too, for the
 * daemon's life: its units hold the young generation smaller still.
 */
export function boundHeapGrowth (): void {
  if (bounded) return
  bounded = true
  try {
    setV8Flag(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
    setV8Flag('--semi-space-growth-factor=1')
  } catch {
    // Not available on this runtime: V8's own heuristics stay.
    return
  }
  // V8 takes the factor at its next full collection. A heap grown already (an index read, and its
  // garbage) is collected now, or the limit it set would carry the whole run.
  if (getHeapStatistics().total_heap_size > GROWN_HEAP_BYTES) releaseMemory()
}

/** A heap past this size was grown by work already done: see {@link boundHeapGrowth}. */
const GROWN_HEAP_BYTES = 64 * 1024 * 1024

let bounded = false

/** How far past the live set V8's heap may grow, in percent (see docs/benchmarks.md, "A restore of many files"). */
const HEAP_GROWING_PERCENT = 50
