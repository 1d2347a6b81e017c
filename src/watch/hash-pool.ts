import type { Worker } from 'node:worker_threads'
import { availableParallelism } from 'node:os'
import type { CidProfileName } from '../content/index.js'
import { AbortedError, HashError } from '../errors.js'
import type { HashJob, HashOutcome } from './hash-messages.js'
import { startWorker } from '../util/start-worker.js'

export const DEFAULT_BATCH_FILES = 64
/** Files past this size travel alone, so one big file does not hold small ones behind it. */
export const DEFAULT_BATCH_BYTES = 4 * 1024 * 1024

export interface HashPoolInit {
  /** Threads; one per core by default. */
  readonly workers?: number
}

export interface HashResult { readonly cid: string, readonly size: number, readonly mtimeMs: number }

interface Pending {
  readonly job: HashJob
  readonly sizeHint: number
  readonly resolve: (result: HashResult) => void
  readonly reject: (err: Error) => void
}

interface Slot { readonly worker: Worker, inFlight: Map<number, Pending>, busy: boolean }

/**
 * Hashes files on worker threads so the event loop never waits on a read or a digest. Jobs are
 * sent in batches (small files cost one message per batch, not per file); each thread holds one
 * batch at a time, so big files spread across threads.
 */
export class HashPool {
  private readonly slots: Slot[]
  private readonly queue: Pending[] = []
  private nextId = 1
  private closed = false

  constructor (init: HashPoolInit = {}) {
    const count = Math.max(1, init.workers ?? availableParallelism())
    this.slots = Array.from({ length: count }, () => this.spawn())
  }

  get size (): number {
    return this.slots.length
  }

  /** Jobs waiting or running. */
  get pending (): number {
    return this.queue.length + this.slots.reduce((n, s) => n + s.inFlight.size, 0)
  }

  /**
   * The CID of a file under a profile. Rejects with a {@link HashError} whose `reason` carries the
   * errno code (`ENOENT`, `EACCES`, `ERR_FILE_CHANGED`...).
   */
  async hash (path: string, profile: CidProfileName, options: { sizeHint?: number, signal?: AbortSignal } = {}): Promise<HashResult> {
    if (this.closed) throw new AbortedError('the hash pool is closed')
    options.signal?.throwIfAborted()
    return await new Promise<HashResult>((resolve, reject) => {
      this.queue.push({ job: { id: this.nextId++, path, profile }, sizeHint: options.sizeHint ?? 0, resolve, reject })
      this.dispatch()
    })
  }

  /** Stops the threads; waiting jobs are rejected. */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const pending of this.queue.splice(0)) pending.reject(new AbortedError('the hash pool closed'))
    await Promise.all(this.slots.map(async slot => {
      for (const pending of slot.inFlight.values()) pending.reject(new AbortedError('the hash pool closed'))
      slot.inFlight.clear()
      await slot.worker.terminate()
    }))
  }

  private spawn (): Slot {
    const worker = startWorker(import.meta.url, 'hash-worker')
    const slot: Slot = { worker, inFlight: new Map(), busy: false }
    worker.on('message', (outcomes: HashOutcome[]) => {
      for (const outcome of outcomes) this.settle(slot, outcome)
      slot.busy = false
      this.dispatch()
    })
    worker.on('error', (err) => {
      // A thread that dies takes its batch with it; fail those jobs and replace the thread.
      for (const pending of slot.inFlight.values()) pending.reject(new HashError(pending.job.path, `hashing thread failed: ${err.message}`, { cause: err }))
      slot.inFlight.clear()
      if (this.closed) return
      const index = this.slots.indexOf(slot)
      if (index >= 0) this.slots[index] = this.spawn()
      this.dispatch()
    })
    return slot
  }

  private settle (slot: Slot, outcome: HashOutcome): void {
    const pending = slot.inFlight.get(outcome.id)
    if (pending === undefined) return
    slot.inFlight.delete(outcome.id)
    if (outcome.ok) pending.resolve({ cid: outcome.cid, size: outcome.size, mtimeMs: outcome.mtimeMs })
    else pending.reject(new HashError(pending.job.path, outcome.code))
  }

  private dispatch (): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0) return
      if (slot.busy) continue
      const batch: Pending[] = []
      let bytes = 0
      while (this.queue.length > 0 && batch.length < DEFAULT_BATCH_FILES) {
        const next = this.queue[0] as Pending
        if (batch.length > 0 && bytes + next.sizeHint > DEFAULT_BATCH_BYTES) break
        batch.push(this.queue.shift() as Pending)
        bytes += next.sizeHint
      }
      for (const pending of batch) slot.inFlight.set(pending.job.id, pending)
      slot.busy = true
      slot.worker.postMessage(batch.map(p => p.job))
    }
  }
}
