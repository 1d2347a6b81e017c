import type { Index } from '../../index/index.js'
import { startWorker } from '../../util/start-worker.js'
import { joinBatch, nextIndexBatch, type JoinedIndexBatch } from './index-batch.js'
import type { IndexBatchJob, IndexBatchMessage, IndexBatchRequest } from './index-batch-worker.js'

/**
 * Batches the thread reads ahead of the one being sealed and uploaded: this thread is often busy
 * elsewhere for a while (a prune's reading), and a few MiB each, they are cheap to hold.
 */
const AHEAD = 8

export interface IndexBatchesInit {
  readonly index: Index
  readonly deviceId: string
  readonly keyId: string
  /** The sequence the first batch starts after. */
  readonly after: number
  /**
   * Read on a thread of its own: SQLite writes each record's JSON text there, while this thread
   * seals and uploads the batches before. Worth its start for many records only.
   */
  readonly onThread: boolean
}

/**
 * `deviceId`'s records after `after`, batch by batch, as {@link nextIndexBatch} cuts them, each
 * batch's texts joined. A record
 * too large for an index object is left out. On a thread, the batches come from the index file as
 * committed, a few ahead; the thread stops when the caller does.
 */
export async function * indexBatches (init: IndexBatchesInit): AsyncGenerator<JoinedIndexBatch> {
  if (!init.onThread) {
    let after = init.after
    for (;;) {
      const batch = nextIndexBatch(init.index, init.deviceId, init.keyId, after, () => {})
      if (batch === undefined) return
      after = batch.last
      yield joinBatch(batch)
    }
  }
  const job: IndexBatchJob = { path: init.index.path, deviceId: init.deviceId, keyId: init.keyId, after: init.after, ahead: AHEAD }
  const worker = startWorker(import.meta.url, 'index-batch-worker', { workerData: job })
  const queue: IndexBatchMessage[] = []
  let wake: (() => void) | undefined
  const arrive = (message: IndexBatchMessage): void => { queue.push(message); wake?.() }
  worker.on('message', arrive)
  worker.once('error', (err) => { arrive({ type: 'failed', name: 'Error', message: `its reading thread failed: ${err.message}` }) })
  worker.once('exit', (code) => { arrive({ type: 'failed', name: 'Error', message: `its reading thread exited (${code}) before the end` }) })
  try {
    for (;;) {
      // Bounded: the thread sends an end or a failure, or its exit stands for one.
      while (queue.length === 0) await new Promise<void>((resolve) => { wake = resolve })
      wake = undefined
      const message = queue.shift() as IndexBatchMessage
      if (message.type === 'end') return
      if (message.type === 'failed') throw threadFailure(message)
      worker.postMessage('more' satisfies IndexBatchRequest)
      yield message.batch
    }
  } finally {
    await worker.terminate()
  }
}

/** The thread's error as this thread would have thrown it: a record that is not JSON stays a SyntaxError. */
function threadFailure (failed: { readonly name: string, readonly message: string }): Error {
  return failed.name === 'SyntaxError' ? new SyntaxError(failed.message) : new Error(failed.message)
}
