import type { Worker } from 'node:worker_threads'
import { availableParallelism } from 'node:os'
import { assembleCid, cidProfile, planSegments, type CidProfileName, type StatTuple } from '../content/index.js'
import { AbortedError, HashError } from '../errors.js'
import type { HashJob, HashOutcome } from './hash-messages.js'
import { JobHasher } from './hash-job.js'
import { startWorker } from '../util/start-worker.js'
import { Queue } from '../util/queue.js'

export const DEFAULT_BATCH_FILES = 256
/** Files past this size travel alone, so one big file does not hold small ones behind it. */
export const DEFAULT_BATCH_BYTES = 4 * 1024 * 1024
/** Threads idle this long are stopped, since each holds memory; the next file starts them again. */
export const DEFAULT_IDLE_TIMEOUT_MS = 15_000
/** A file this large is cut into one segment per thread, so that one big file uses every core. */
export const DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
/** A thread holds more batches while it works on one, so it never waits on the main thread. */
const BATCHES_PER_THREAD = 4
/**
 * Work that one more thread is started for: bytes or files waiting or in flight, per thread.
 * A thread's start costs about as much CPU as hashing this much. A command that hashes a few
 * small files starts one thread, not one per core.
 */
const THREAD_BYTES = 16 * 1024 * 1024
const THREAD_FILES = 256
/**
 * Jobs waiting past which {@link HashPool.room} holds a producer back: enough that the threads
 * never run dry (they hold at most 4 x 256 each, and this is four more batches), few enough that
 * what waits dies young. Many more waiting jobs outlive the main thread's young-generation
 * collections, and each collection copies them (docs/benchmarks.md, "Start-up, the first index
 * and the index's restore").
 */
export const DEFAULT_ROOM_JOBS = 1_024

/**
 * What a one-off command (`snapshot`, `cid`) may hash on its own thread before it starts a hashing
 * thread: a thread's start costs about as much CPU as hashing {@link THREAD_BYTES}.
 */
export const COMMAND_INLINE_HASH_BYTES = 8 * 1024 * 1024

/** The largest file hashed on the calling thread (see {@link HashPoolInit.inlineBytes}): a blocking read of a few milliseconds at most. */
const INLINE_FILE_BYTES = 1024 * 1024

/** What a file of no size told counts for against {@link HashPoolInit.inlineBytes}. */
const INLINE_UNKNOWN_BYTES = 4096

export interface HashPoolInit {
  /** Threads; one per core by default. */
  readonly workers?: number
  readonly idleTimeoutMs?: number
  /** Files at least this large are hashed on every thread at once. */
  readonly splitBytes?: number
  /** Waiting jobs past which {@link HashPool.room} waits. */
  readonly roomJobs?: number
  /**
   * Bytes this pool may hash on the calling thread before its first thread starts, in files of
   * 1 MiB at most: a command that hashes a few small files then starts none. 0 (the default) for
   * a daemon, whose event loop never waits on a read.
   */
  readonly inlineBytes?: number
}

export interface HashResult { readonly cid: string, readonly size: number, readonly mtimeMs: number, readonly stat: StatTuple }

/** Called once per job: a {@link HashError} (reason = errno-style code) or an AbortedError, else the result. */
export type HashCallback = (err: HashError | AbortedError | undefined, result?: HashResult) => void

type Answer = { readonly cid: string, readonly size: number, readonly mtimeMs: number, readonly stat: StatTuple } | { readonly digests: Uint8Array, readonly mtimeMs: number, readonly stat: StatTuple }

interface Pending { readonly job: HashJob, readonly sizeHint: number, readonly done: (err: HashError | AbortedError | undefined, answer?: Answer) => void }

interface Slot { readonly worker: Worker, readonly inFlight: Map<number, Pending>, batches: number, bytes: number, readonly progress: BigInt64Array }

/** What the pool is hashing now (see {@link HashPool.progress}). */
export interface HashingProgress { readonly files: number, readonly bytes: number, readonly bytesRead: number }

/**
 * Hashes files on worker threads so the event loop never waits on a read or a digest. Jobs are
 * sent in batches (small files cost one message per batch, not per file); each thread holds at
 * most four batches (sent round by round), so big files spread across threads. Threads start as the
 * work waiting calls for them, up to the pool's size, and stop when idle.
 */
export class HashPool {
  private slots: Slot[] = []
  private readonly queue = new Queue<Pending>()
  /** The size hints of the jobs in {@link queue}. */
  private queuedBytes = 0
  private readonly threads: number
  private readonly idleTimeoutMs: number
  private readonly splitBytes: number
  private idleTimer: NodeJS.Timeout | undefined
  private nextId = 1
  private closed = false
  private readonly roomJobs: number
  private roomWaiters: Array<() => void> = []
  private hashed = 0
  private inlineLeft: number
  private readonly here = new JobHasher()

  constructor (init: HashPoolInit = {}) {
    this.threads = Math.max(1, init.workers ?? availableParallelism())
    this.idleTimeoutMs = init.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
    this.splitBytes = init.splitBytes ?? DEFAULT_SPLIT_BYTES
    this.roomJobs = init.roomJobs ?? DEFAULT_ROOM_JOBS
    this.inlineLeft = init.inlineBytes ?? 0
  }

  /**
   * Resolves once the jobs waiting for a thread are fewer than the pool's bound, at once if they
   * are or the pool is closed. A producer of many files (the startup scan) waits on it between
   * batches. So what is queued stays bounded, however many files there are. Submitting never waits.
   */
  async room (): Promise<void> {
    if (this.closed || this.queue.length < this.roomJobs) return
    await new Promise<void>(resolve => this.roomWaiters.push(resolve))
  }

  private wakeRoom (): void {
    if (this.roomWaiters.length === 0 || (!this.closed && this.queue.length >= this.roomJobs)) return
    const waiters = this.roomWaiters
    this.roomWaiters = []
    for (const wake of waiters) wake()
  }

  /** Threads running now. */
  get size (): number {
    return this.slots.length
  }

  /** Bytes of the files hashed whole since the pool was made. */
  get hashedBytes (): number {
    return this.hashed
  }

  /** Jobs waiting or running. */
  get pending (): number {
    return this.queue.length + this.slots.reduce((n, s) => n + s.inFlight.size, 0)
  }

  /**
   * The files being hashed now, their bytes, and how many of those are read: large files show
   * their progress here, a batch of small ones as it goes.
   */
  progress (): HashingProgress {
    let files = 0
    let bytes = 0
    let bytesRead = 0
    for (const slot of this.slots) {
      for (const pending of slot.inFlight.values()) { files++; bytes += pending.sizeHint }
      bytesRead += Number(Atomics.load(slot.progress, 0))
    }
    return { files, bytes, bytesRead: Math.min(bytes, bytesRead) }
  }

  /** Starts as many threads as the work waiting and in flight calls for, up to the pool's size. */
  private grow (): void {
    let bytes = this.queuedBytes
    for (const slot of this.slots) bytes += slot.bytes
    // Never more threads than jobs: a file not split is hashed on one thread, however large.
    const jobs = this.pending
    const wanted = Math.min(this.threads, jobs, Math.max(1, Math.ceil(bytes / THREAD_BYTES), Math.ceil(jobs / THREAD_FILES)))
    while (this.slots.length < wanted) this.slots.push(this.spawn())
  }

  /**
   * Queues a file; `done` is called once, from the event loop. The cheap path for many files.
   * `sizeHint` (the size a stat gave, 0 if unknown) batches small files and splits large ones.
   */
  submit (path: string, profile: CidProfileName, sizeHint: number, done: HashCallback): void {
    if (this.closed) {
      done(new AbortedError('the hash pool is closed'))
      return
    }
    if (sizeHint >= this.splitBytes && this.threads > 1) {
      this.submitSegments(path, profile, sizeHint, done)
      return
    }
    // A size not known counts as a small file's: the bound is checked on the file opened.
    const here = Math.max(sizeHint, INLINE_UNKNOWN_BYTES)
    if (this.slots.length === 0 && sizeHint <= INLINE_FILE_BYTES && here <= this.inlineLeft) {
      // Held until it is hashed, then the bytes it really had are counted.
      this.inlineLeft -= here
      setImmediate(() => {
        this.inlineLeft += here
        this.hashHere(path, profile, sizeHint, done)
      })
      return
    }
    this.enqueue(path, profile, sizeHint, done)
  }

  private enqueue (path: string, profile: CidProfileName, sizeHint: number, done: HashCallback): void {
    this.queuedBytes += sizeHint
    this.queue.push({
      job: { id: this.nextId++, path, profile },
      sizeHint,
      done: (err, answer) => { if (err !== undefined || answer === undefined) done(err); else this.answer(answer, done) }
    })
    this.dispatch()
  }

  /** One small file hashed on this thread, as a thread would; a file grown past the bound goes to a thread. */
  private hashHere (path: string, profile: CidProfileName, sizeHint: number, done: HashCallback): void {
    if (this.closed) { done(new AbortedError('the hash pool closed')); return }
    // New files come with no size: the bytes allowed are counted as each is hashed, and once
    // they are spent, or a thread started, the files still waiting go to the threads.
    if (this.inlineLeft <= 0 || this.slots.length > 0) { this.enqueue(path, profile, sizeHint, done); return }
    const outcome = this.here.hash({ id: 0, path, profile }, undefined, INLINE_FILE_BYTES)
    if (outcome === 'too-large') { this.enqueue(path, profile, sizeHint, done); return }
    if (!outcome.ok) { done(new HashError(path, outcome.code)); return }
    if ('cid' in outcome) this.inlineLeft -= outcome.size
    this.answer(outcome, done)
  }

  /** A whole file's outcome told to its caller, its bytes counted. */
  private answer (outcome: Answer, done: HashCallback): void {
    if (!('cid' in outcome)) { done(undefined); return }
    this.hashed += outcome.size
    done(undefined, { cid: outcome.cid, size: outcome.size, mtimeMs: outcome.mtimeMs, stat: outcome.stat })
  }

  private submitSegments (path: string, profile: CidProfileName, size: number, done: HashCallback): void {
    const profileInfo = cidProfile(profile)
    const segments = planSegments(size, profileInfo, this.threads)
    const digests: Uint8Array[] = []
    const mtimes = new Set<number>()
    // Each segment opens the file by its path: a file of the same size and mtime renamed over it
    // meanwhile (cp -p, rsync -t) would mix two files' digests. Every segment must read one inode.
    const inodes = new Set<string>()
    let stat: StatTuple | undefined
    let waiting = segments.length
    let failed: HashError | AbortedError | undefined
    segments.forEach((segment, i) => {
      const sizeHint = segment.count * profileInfo.chunkSize
      this.queuedBytes += sizeHint
      this.queue.push({
        job: { id: this.nextId++, path, profile, segment: { ...segment, size } },
        sizeHint,
        done: (err, answer) => {
          if (err !== undefined) failed ??= err
          else if (answer !== undefined && 'digests' in answer) { digests[i] = answer.digests; mtimes.add(answer.mtimeMs); inodes.add(`${answer.stat[4]}:${answer.stat[5]}`); stat ??= answer.stat }
          if (--waiting > 0) return
          if (failed !== undefined) return done(failed)
          // Segments read at different times must have seen the same file.
          if (mtimes.size !== 1 || inodes.size !== 1) return done(new HashError(path, 'ERR_FILE_CHANGED'))
          this.hashed += size
          done(undefined, { cid: assembleCid(profileInfo, size, digests).toString(), size, mtimeMs: [...mtimes][0] as number, stat: stat as StatTuple })
        }
      })
    })
    // A split file is hashed on a thread a segment, whatever its bytes call for.
    while (!this.closed && this.slots.length < Math.min(this.threads, segments.length)) this.slots.push(this.spawn())
    this.dispatch()
  }

  /** The CID of a file under a profile; rejects as {@link submit} reports. */
  async hash (path: string, profile: CidProfileName, options: { sizeHint?: number } = {}): Promise<HashResult> {
    return await new Promise<HashResult>((resolve, reject) => {
      this.submit(path, profile, options.sizeHint ?? 0, (err, result) => { if (err !== undefined) reject(err); else resolve(result as HashResult) })
    })
  }

  /** Stops the threads; waiting and running jobs are answered with an AbortedError. */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearTimeout(this.idleTimer)
    this.queuedBytes = 0
    for (const pending of this.queue.drain()) pending.done(new AbortedError('the hash pool closed'))
    this.wakeRoom()
    await this.stopThreads()
  }

  private async stopThreads (): Promise<void> {
    const slots = this.slots
    this.slots = []
    await Promise.all(slots.map(async slot => {
      for (const pending of slot.inFlight.values()) pending.done(new AbortedError('the hash pool closed'))
      slot.inFlight.clear()
      await slot.worker.terminate()
    }))
  }

  private armIdleTimer (): void {
    clearTimeout(this.idleTimer)
    this.idleTimer = undefined
    if (this.pending > 0 || this.slots.length === 0) return
    this.idleTimer = setTimeout(() => { if (this.pending === 0) void this.stopThreads() }, this.idleTimeoutMs)
    this.idleTimer.unref()
  }

  private spawn (): Slot {
    const worker = startWorker(import.meta.url, 'hash-worker')
    const progress = new SharedArrayBuffer(8)
    worker.postMessage({ progress })
    const slot: Slot = { worker, inFlight: new Map(), batches: 0, bytes: 0, progress: new BigInt64Array(progress) }
    worker.on('message', (outcomes: HashOutcome[]) => {
      slot.batches--
      for (const outcome of outcomes) this.settle(slot, outcome)
      this.dispatch()
    })
    worker.on('error', (err) => {
      // A thread that dies takes its batches with it; fail those jobs and replace the thread.
      // Out of descriptors (no thread could start) is named as such: it passes, and is retried soon.
      const short = /\b(EMFILE|ENFILE)\b/.exec(err.message)?.[1]
      for (const pending of slot.inFlight.values()) pending.done(new HashError(pending.job.path, short ?? `hashing thread failed: ${err.message}`, { cause: err }))
      slot.inFlight.clear()
      this.slots = this.slots.filter(s => s !== slot)
      this.dispatch()
    })
    return slot
  }

  private settle (slot: Slot, outcome: HashOutcome): void {
    const pending = slot.inFlight.get(outcome.id)
    if (pending === undefined) return
    slot.inFlight.delete(outcome.id)
    slot.bytes -= pending.sizeHint
    if (outcome.ok) pending.done(undefined, outcome)
    else pending.done(new HashError(pending.job.path, outcome.code))
  }

  private dispatch (): void {
    if (this.queue.length > 0 && !this.closed) this.grow()
    // Round by round, so that each thread gets its first batch before any gets a second.
    for (let round = 0; round < BATCHES_PER_THREAD && this.queue.length > 0; round++) {
      for (const slot of this.slots) {
        if (this.queue.length === 0) break
        if (slot.batches <= round) this.send(slot)
      }
    }
    this.armIdleTimer()
    this.wakeRoom()
  }

  private send (slot: Slot): void {
    const batch: Pending[] = []
    let bytes = 0
    while (this.queue.length > 0 && batch.length < DEFAULT_BATCH_FILES) {
      const next = this.queue.peek() as Pending
      if (batch.length > 0 && bytes + next.sizeHint > DEFAULT_BATCH_BYTES) break
      this.queue.shift()
      batch.push(next)
      bytes += next.sizeHint
    }
    this.queuedBytes -= bytes
    for (const pending of batch) slot.inFlight.set(pending.job.id, pending)
    slot.batches++
    slot.bytes += bytes
    slot.worker.postMessage(batch.map(p => p.job))
  }
}
