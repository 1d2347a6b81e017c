// A thread that reads a device's content records as index objects hold them, a few batches ahead.
import { parentPort, workerData } from 'node:worker_threads'
import { LEAN_CACHE_KIB, openIndex, type Index } from '../../index/index.js'
import { joinBatch, nextIndexBatch, type JoinedIndexBatch } from './index-batch.js'

export interface IndexBatchJob {
  /** The index file, opened read-only here: the caller's connection goes on writing. */
  readonly path: string
  readonly deviceId: string
  readonly keyId: string
  readonly after: number
  /** Batches sent before the caller asks for more. */
  readonly ahead: number
}

/** What the thread sends: a batch, the end, or why it stopped. */
export type IndexBatchMessage =
  | { readonly type: 'batch', readonly batch: JoinedIndexBatch }
  | { readonly type: 'end' }
  | { readonly type: 'failed', readonly name: string, readonly message: string }

/** What the caller sends: one more batch may come. */
export type IndexBatchRequest = 'more'

const job = workerData as IndexBatchJob
let credits = job.ahead
let after = job.after
let ended = false
let index: Index | undefined

/** Sends batches while the caller has room for them; the last message ends the thread's work. */
function pump (): void {
  try {
    // A small page cache: the records are read once, in sequence order, and the thread's memory counts in the caller's.
    index ??= openIndex(job.path, { readonly: true, check: false, cacheKiB: LEAN_CACHE_KIB })
    while (!ended && credits > 0) {
      const batch = nextIndexBatch(index, job.deviceId, job.keyId, after, () => {})
      if (batch === undefined) {
        finish({ type: 'end' })
        return
      }
      after = batch.last
      credits--
      const joined = joinBatch(batch)
      parentPort?.postMessage({ type: 'batch', batch: joined } satisfies IndexBatchMessage, [joined.records.bytes.buffer as ArrayBuffer])
    }
  } catch (err) {
    const { name, message } = err instanceof Error ? err : new Error(String(err))
    finish({ type: 'failed', name, message })
  }
}

function finish (message: IndexBatchMessage): void {
  ended = true
  index?.close()
  parentPort?.postMessage(message)
  parentPort?.close()
}

parentPort?.on('message', (message: unknown) => {
  if (message !== ('more' satisfies IndexBatchRequest)) return
  credits++
  pump()
})
pump()
