import { createHash } from 'node:crypto'
import type { Worker } from 'node:worker_threads'
import { HashThreadError } from '../errors.js'
import { startWorker } from '../util/start-worker.js'
import type { HashAnswer, HashJob } from './block-hash-messages.js'

/**
 * Blocks smaller than this are hashed on the calling thread: a message each way costs more than
 * hashing a few KiB (and small buffers share Node's pool, so their memory cannot be transferred).
 */
export const MIN_OFF_THREAD_BYTES = 64 * 1024

interface Waiting { readonly resolve: (answer: HashAnswer) => void, readonly reject: (err: Error) => void }

/**
 * SHA-256 of blocks on a thread of its own, so an export's one thread only reads, compares and
 * copies (hashing was 28% of its time: docs/benchmarks.md, Exits, third pass). A block's memory is
 * transferred there and back, not copied. One thread: the machine this was measured on has two
 * cores, the other busy with the export's own work. Started on the first large block; stopped by
 * {@link close}, and keeps the process alive only while it owes an answer.
 */
export class BlockHasher {
  private worker: Worker | undefined
  private failure: HashThreadError | undefined
  private readonly waiting = new Map<number, Waiting>()
  private next = 0
  private closed = false

  /**
   * The SHA-256 of `bytes`, and the bytes. `owned`: the caller owns the whole buffer `bytes` lies
   * in (nothing else views it), so a large block is hashed on the thread, its buffer transferred
   * there and back: `bytes` is then detached, and what is answered is a view of the same memory
   * at the same place. Else hashed here. A failure of the thread is a {@link HashThreadError} for
   * every block it held.
   */
  async sha256 (bytes: Uint8Array, owned: boolean): Promise<{ bytes: Uint8Array, digest: Uint8Array }> {
    const done = await this.sha256Run([bytes], owned)
    return { bytes: done.blocks[0] as Uint8Array, digest: done.digests[0] as Uint8Array }
  }

  /**
   * The SHA-256 of each of `blocks`, all views of one buffer (a run of leaves read at once): as
   * {@link sha256}, with one message each way for all of them. `owned`: the caller owns that whole
   * buffer; it is then detached, and the blocks answered are views of the same memory at the same
   * places.
   */
  async sha256Run (blocks: readonly Uint8Array[], owned: boolean): Promise<{ blocks: Uint8Array[], digests: Uint8Array[] }> {
    const buffer = blocks[0]?.buffer
    const total = blocks.reduce((sum, block) => sum + block.byteLength, 0)
    if (!owned || this.closed || total < MIN_OFF_THREAD_BYTES || !(buffer instanceof ArrayBuffer) || blocks.some(block => block.buffer !== buffer)) {
      return { blocks: [...blocks], digests: blocks.map(block => createHash('sha256').update(block).digest()) }
    }
    if (this.failure !== undefined) throw this.failure
    const worker = this.start()
    const id = this.next++
    const ranges = blocks.flatMap(block => [block.byteOffset, block.byteLength])
    const answer = await new Promise<HashAnswer>((resolve, reject) => {
      // Held while it owes an answer: an unref'd thread alone would let the process exit mid-export.
      if (this.waiting.size === 0) worker.ref()
      this.waiting.set(id, { resolve, reject })
      worker.postMessage({ id, buffer, ranges } satisfies HashJob, [buffer])
    })
    return {
      blocks: blocks.map((_, i) => new Uint8Array(answer.buffer, ranges[2 * i], ranges[2 * i + 1])),
      digests: blocks.map((_, i) => new Uint8Array(answer.digests, 32 * i, 32))
    }
  }

  private start (): Worker {
    if (this.worker !== undefined) return this.worker
    const worker = startWorker(import.meta.url, 'block-hash-worker')
    worker.unref()
    worker.on('message', (answer: HashAnswer) => {
      const waiting = this.waiting.get(answer.id)
      this.waiting.delete(answer.id)
      if (this.waiting.size === 0) worker.unref()
      waiting?.resolve(answer)
    })
    const fail = (why: string, cause?: unknown): void => {
      this.failure ??= new HashThreadError(`the thread hashing blocks ${why}: nothing unchecked was written; run the command again`, { cause })
      for (const waiting of this.waiting.values()) waiting.reject(this.failure)
      this.waiting.clear()
      this.worker = undefined
    }
    worker.on('error', err => { fail(`failed (${err.message})`, err) })
    worker.on('exit', code => { if (!this.closed) fail(`stopped (exit code ${code})`) })
    this.worker = worker
    return worker
  }

  /** Stops the thread; blocks still on it fail, and later ones are hashed on the calling thread. */
  async close (): Promise<void> {
    this.closed = true
    const worker = this.worker
    this.worker = undefined
    for (const waiting of this.waiting.values()) waiting.reject(new HashThreadError('the thread hashing blocks was stopped before it answered'))
    this.waiting.clear()
    await worker?.terminate()
  }
}
