import { rm } from 'node:fs/promises'
import type { Worker } from 'node:worker_threads'
import { FileChangedWhileHashingError } from '../content/index.js'
import { AbortedError, ContentIntegrityError, InternalError } from '../errors.js'
import { startWorker } from '../util/start-worker.js'
import type { FileToStore } from './file-to-store.js'
import type { CidProfileName, ObjectBlocks } from '../content/index.js'
import type { FromSealer, HashJob, LargeJob, SmallJob, ToSealer, UnsealJob } from './seal-messages.js'

type Answer = Exclude<FromSealer, { type: 'failed' }>

/**
 * A sealing thread's young generation. The thread makes few objects but many large buffers, and a
 * small young generation's frequent scavenges free them sooner. Otherwise each thread keeps its
 * spent buffers until its heap is collected. So peak RSS while storing is bounded.
 */
const YOUNG_MB = 2

interface Job {
  readonly thread: Thread
  /** Every message about the job but its failure. */
  readonly onMessage: (message: Answer) => void
  readonly fail: (err: Error) => void
}

interface Thread { readonly worker: Worker, jobs: number }

export interface SealPartsInit {
  readonly key: Uint8Array
  readonly spoolDir: string
  readonly partChunks: number
  /** Parts already stored by an earlier, interrupted run: sent again only when these bytes make another object. */
  readonly storedParts: ReadonlyMap<number, string>
  /**
   * Sends one part file, whose object CID is `object` (its blocks as they were hashed: `blocks`);
   * answers the CID stored. The file is removed after.
   */
  readonly storePart: (index: number, path: string, bytes: number, object: string, blocks: ObjectBlocks) => Promise<string>
  readonly signal?: AbortSignal
}

/** An object's bytes hashed on a sealing thread as they come ({@link SealPool.hashStream}). */
export interface ObjectHashStream {
  update: (bytes: Uint8Array) => void
  finish: () => Promise<string>
}

export interface UnsealInit {
  /**
   * The temp file to create and write (the thread closes it, and removes it when the job fails or
   * is given up; else its caller renames or removes it). Null: the plaintext is only hashed.
   */
  readonly path: string | null
  /** The file key. */
  readonly key: Uint8Array
  /** The row's CID: bound into every chunk. */
  readonly cid: string
  /** The same CID as bytes (its own, not a view of a larger buffer: it is copied to the thread). */
  readonly cidBytes: Uint8Array
  readonly size: number
  /** The row's profile, to hash the plaintext under. */
  readonly profile: CidProfileName
  /** Set on the file once it is written. */
  readonly mtimeMs: number
  /** The file's mode once verified (it is 0600 until then). */
  readonly mode: number
  /** Its owner and group once verified (as root), set before its mode. */
  readonly uid?: number
  readonly gid?: number
  /** Where its directory really is: checked right after the temp is made, before a byte is written. */
  readonly dir?: string
  /** The whole blob at once (views of an object in memory): {@link Unsealer.end} is then the only call, one message each way. */
  readonly whole?: readonly Uint8Array[]
}

/** One file being opened in a sealing thread ({@link SealPool.unseal}). */
export interface Unsealer {
  /** The job's id: what {@link SealPool.syncUnsealed} takes once it ended verified. */
  readonly id: number
  /** Sends the blob's next slice; answers the plaintext bytes it gave, once opened and written. */
  piece: (bytes: Uint8Array) => Promise<number>
  /**
   * The blob is whole: answers the CID of the plaintext written, and the file's inode. A file
   * that hashed to its row's CID is held open by its thread until {@link SealPool.syncUnsealed}
   * names it (or the pool closes); one that did not is already removed.
   */
  end: () => Promise<{ cid: string, inode: number }>
  /** Gives the job up: its pending answers fail; answers once its thread removed its file (at once when the job had ended). */
  cancel: () => Promise<void>
}

/** A failure a sealing thread reported, as the caller of the in-process sealing saw it. */
function failure (message: Extract<FromSealer, { type: 'failed' }>): Error {
  if (message.changed) return new FileChangedWhileHashingError(message.message)
  if (message.code === 'ERR_CONTENT_INTEGRITY') return new ContentIntegrityError(message.message)
  return Object.assign(new Error(message.message), message.code === undefined ? {} : { code: message.code })
}

/**
 * Threads that read, hash and seal files (seal-worker.ts). So the thread that sends (and, for the
 * embedded service, the one that imports) never waits on them. Otherwise every byte's read, hash,
 * seal and spool write would run between its sends. Started on first use, `size` at most;
 * {@link close} ends them. A file is read once, its bytes hashed to the row's CID as they are
 * sealed, exactly as `sealSmallFile` and `sealFileInParts` do in process.
 */
export class SealPool {
  private readonly threads: Thread[] = []
  private readonly jobs = new Map<number, Job>()
  /** Cancelled unseal jobs whose thread has not yet said their file is gone. */
  private readonly drops = new Map<number, { readonly thread: Thread, readonly resolve: () => void }>()
  /** Ended unseal jobs whose thread holds their verified file open, waiting for a sync. */
  private readonly held = new Map<number, Thread>()
  private nextId = 1
  private closed = false
  /**
   * The jobs of each signal, told by one 'abort' listener per signal. A listener per job makes Node
   * warn (MaxListenersExceededWarning) past ten jobs of one signal, which a daemon storing many
   * files reaches.
   */
  private readonly aborts = new WeakMap<AbortSignal, Set<() => void>>()
  /**
   * One part of any file is sent at a time: a kill then loses (and a restart sends again) at most
   * one part, as docs/content-format.md promises, however many large files are being stored.
   */
  private partTurn: Promise<unknown> = Promise.resolve()

  constructor (private readonly size: number) {}

  /** Seals a small file whole; answers its blob once its bytes hash to the row's CID. */
  async sealSmall (file: FileToStore, key: Uint8Array, signal?: AbortSignal): Promise<Buffer> {
    return await new Promise<Buffer>((resolve, reject) => {
      const id = this.start({ type: 'small', ...this.common(file, key) }, {
        onMessage: (message) => { if (message.type === 'blob') { this.end(id); resolve(Buffer.from(message.blob)) } },
        fail: reject
      }, signal)
    })
  }

  /**
   * Seals a large file into parts, sending each through `storePart` as it is whole while the next
   * is sealed; answers each part's object CID and length, in order, once the whole file hashed to
   * the row's CID. A part an earlier run stored is kept when these bytes make that object.
   */
  async sealParts (file: FileToStore, init: SealPartsInit): Promise<Array<readonly [string, number]>> {
    const parts: Array<readonly [string, number]> = []
    let sending = Promise.resolve()
    let failed: Error | undefined
    let finished = false
    return await new Promise((resolve, reject) => {
      const finish = (err?: Error): void => {
        if (finished) return
        finished = true
        this.end(id)
        // Every part in hand is sent or dropped before the file's answer, so none is left behind.
        sending.then(() => { if (err === undefined && failed === undefined) resolve(parts); else reject(failed ?? err) }, reject)
      }
      const job: LargeJob = { type: 'large', ...this.common(file, init.key), spoolDir: init.spoolDir, partChunks: init.partChunks, storedParts: [...init.storedParts] }
      const id = this.start(job, {
        onMessage: (message) => {
          if (message.type === 'done') { finish(); return }
          if (message.type !== 'part') return
          const { index, path, object, bytes, blocks } = message
          sending = sending.then(async () => {
            if (path === null) { parts[index] = [object, bytes]; return }
            try {
              if (failed !== undefined) return
              const turn = this.partTurn.then(async () => await init.storePart(index, path, bytes, object, blocks))
              this.partTurn = turn.catch(() => {})
              parts[index] = [await turn, bytes]
              this.send(id, { type: 'ack', id })
            } catch (err) {
              failed ??= err as Error
              this.send(id, { type: 'cancel', id })
              finish(failed)
            } finally {
              await rm(path, { force: true })
            }
          })
        },
        fail: (err) => { failed ??= err; finish(err) }
      }, init.signal)
    })
  }

  /** The CID of an object's bytes (its slabs in order) under the snapshots' profile, hashed in a thread (a restore checks what a gateway sent). */
  async hashObject (slabs: readonly Uint8Array[], signal?: AbortSignal): Promise<string> {
    return (await this.hashJob(slabs, false, signal)).cid
  }

  /** {@link hashObject}, with the object's blocks: a service in this process stores them without hashing again. */
  async hashObjectBlocks (slabs: readonly Uint8Array[], signal?: AbortSignal): Promise<{ cid: string, blocks: ObjectBlocks }> {
    const { cid, blocks } = await this.hashJob(slabs, true, signal)
    if (blocks === undefined) throw new InternalError('a sealing thread hashed an object without its blocks')
    return { cid, blocks }
  }

  /**
   * {@link hashObject} of bytes handed over as they come: each `update` (a view of shared memory,
   * not copied, left as it is until the answer) is hashed on the thread at once, while the caller
   * reads the next. `finish` answers once the last is hashed.
   */
  hashStream (signal?: AbortSignal): ObjectHashStream {
    const id = this.nextId++
    const answered = new Promise<string>((resolve, reject) => {
      this.start({ type: 'hash', id, slabs: [], open: true }, {
        onMessage: (message) => { if (message.type === 'hashed') { this.end(id); resolve(message.cid) } },
        fail: reject
      }, signal)
    })
    // Owned here until `finish` is awaited: a thread that failed first rejects it early.
    answered.catch(() => {})
    return {
      update: (bytes) => { this.send(id, { type: 'hash-piece', id, bytes }) },
      finish: async () => {
        this.send(id, { type: 'hash-end', id })
        return await answered
      }
    }
  }

  private async hashJob (slabs: readonly Uint8Array[], blocks: boolean, signal?: AbortSignal): Promise<{ cid: string, blocks?: ObjectBlocks }> {
    return await new Promise((resolve, reject) => {
      const id = this.start({ type: 'hash', id: this.nextId++, slabs, ...(blocks ? { blocks } : {}) }, {
        onMessage: (message) => { if (message.type === 'hashed') { this.end(id); resolve(message) } },
        fail: reject
      }, signal)
    })
  }

  /**
   * Opens a file's blob into `fd` in a thread, slice by slice (unseal-jobs.ts): the plaintext is
   * hashed under `profile` as it is written to `path`, which the thread creates, fsyncs and closes.
   * The caller checks and renames (or removes) it.
   */
  unseal (init: UnsealInit, signal?: AbortSignal): Unsealer {
    return this.unsealJob(init, signal)
  }

  /**
   * {@link unseal} for whole blobs (the files of one pack), sent to one thread in one message and
   * answered in one: a message each way a batch, not a file. Each file is a job of its own, ended,
   * held, synced and cancelled as one.
   */
  unsealMany (inits: readonly UnsealInit[], signal?: AbortSignal): Unsealer[] {
    const thread = this.closed ? undefined : this.pick()
    const batch: UnsealJob[] = []
    const unsealers = inits.map(init => this.unsealJob(init, signal, thread === undefined ? undefined : { thread, batch }))
    if (thread !== undefined && batch.length > 0) thread.worker.postMessage({ type: 'unseal-many', jobs: batch } satisfies ToSealer)
    return unsealers
  }

  private unsealJob (init: UnsealInit, signal?: AbortSignal, into?: { readonly thread: Thread, readonly batch: UnsealJob[] }): Unsealer {
    const waiting: Array<{ resolve: (value: number | { cid: string, inode: number }) => void, reject: (err: Error) => void }> = []
    let failed: Error | undefined
    // A whole blob's answer comes unasked: kept for the `end` that takes it.
    let whole: { cid: string, inode: number, plainBytes: number } | undefined
    const id = this.start({ type: 'unseal', id: this.nextId++, ...init }, {
      onMessage: (message) => {
        if (message.type === 'opened') waiting.shift()?.resolve(message.plainBytes)
        if (message.type === 'unsealed') {
          // A check's thread holds no file for a sync to take.
          if (message.cid === init.cid && init.path !== null) this.held.set(id, this.jobs.get(id)?.thread as Thread)
          this.end(id)
          if (init.whole !== undefined) whole = { cid: message.cid, inode: message.inode, plainBytes: message.plainBytes ?? 0 }
          else waiting.shift()?.resolve({ cid: message.cid, inode: message.inode })
          for (const w of init.whole === undefined ? [] : waiting.splice(0)) w.resolve(whole as { cid: string, inode: number })
        }
      },
      fail: (err) => { failed ??= err; for (const w of waiting.splice(0)) w.reject(err) }
    }, signal, into?.thread, into?.batch)
    const ask = async <T extends number | { cid: string, inode: number }>(message: ToSealer): Promise<T> => {
      if (failed !== undefined) throw failed
      const answer = new Promise<number | { cid: string, inode: number }>((resolve, reject) => { waiting.push({ resolve, reject }) })
      this.send(id, message)
      return await answer as T
    }
    return {
      id,
      piece: async (bytes) => await ask<number>({ type: 'piece', id, bytes }),
      end: async () => {
        if (init.whole === undefined) return await ask<{ cid: string, inode: number }>({ type: 'end', id })
        if (failed !== undefined) throw failed
        if (whole !== undefined) return whole
        return await new Promise<{ cid: string, inode: number }>((resolve, reject) => { waiting.push({ resolve: resolve as (value: number | { cid: string, inode: number }) => void, reject }) })
      },
      cancel: async () => {
        const job = this.jobs.get(id)
        if (job === undefined) return
        const dropped = new Promise<void>(resolve => { this.drops.set(id, { thread: job.thread, resolve }) })
        this.send(id, { type: 'cancel', id })
        job.fail(new AbortedError('the file\'s restore was given up'))
        this.hold(job.thread)
        await dropped
      }
    }
  }

  /**
   * fsyncs and closes the held files of these ended unseal jobs ({@link Unsealer.end}), each
   * thread's all at once; answers the jobs whose file failed (already removed), with why. A job
   * its thread no longer holds fails too: a file is never taken for durable unseen.
   */
  async syncUnsealed (ids: readonly number[]): Promise<Map<number, Error>> {
    const failed = new Map<number, Error>()
    const byThread = new Map<Thread, number[]>()
    for (const id of ids) {
      const thread = this.held.get(id)
      this.held.delete(id)
      if (thread === undefined || !this.threads.includes(thread)) { failed.set(id, new AbortedError('the file\'s thread is gone: it was not made durable')); continue }
      byThread.set(thread, [...(byThread.get(thread) ?? []), id])
    }
    await Promise.all([...byThread].map(async ([thread, jobs]) => {
      await new Promise<void>((resolve) => {
        const syncId = this.start({ type: 'sync', id: this.nextId++, jobs }, {
          onMessage: (message) => {
            if (message.type !== 'synced') return
            this.end(syncId)
            for (const f of message.failed) failed.set(f.job, failure({ type: 'failed', id: f.job, changed: false, code: f.code, message: f.message }))
            resolve()
          },
          fail: (err) => { for (const job of jobs) failed.set(job, err); resolve() }
        }, undefined, thread)
      })
    }))
    return failed
  }

  /** Ends the threads; jobs still running fail, and files held for a sync are closed with them (their caller removes them). */
  async close (): Promise<void> {
    this.closed = true
    this.held.clear()
    for (const job of [...this.jobs.values()]) job.fail(new AbortedError('the sealing threads were stopped'))
    this.jobs.clear()
    for (const id of [...this.drops.keys()]) this.dropped(id)
    await Promise.all(this.threads.splice(0).map(async t => await t.worker.terminate()))
  }

  private common (file: FileToStore, key: Uint8Array): Omit<SmallJob, 'type'> {
    return { id: this.nextId++, path: file.path, key, cid: file.cid.toString(), size: file.size, profile: file.profile.name }
  }

  /** Starts a job on `on` (else the least busy thread); `batch` takes its message instead of the thread, for the caller to send with others. */
  private start (message: SmallJob | LargeJob | HashJob | UnsealJob | Extract<ToSealer, { type: 'sync' }>, handlers: Omit<Job, 'thread'>, signal?: AbortSignal, on?: Thread, batch?: UnsealJob[]): number {
    const { id } = message
    // Told after this returns: the caller's handlers may use the id it answers.
    if (this.closed) { queueMicrotask(() => { handlers.fail(new AbortedError('the sealing threads were stopped')) }); return id }
    if (signal?.aborted === true) { queueMicrotask(() => { handlers.fail(signal.reason as Error) }); return id }
    const thread = on ?? this.pick()
    let settled = false
    const cancelJob = (): void => { this.send(id, { type: 'cancel', id }); job.fail(signal?.reason as Error) }
    const unlisten = signal === undefined ? undefined : this.onAbort(signal, cancelJob)
    const job: Job = {
      thread,
      onMessage: handlers.onMessage,
      fail: (err) => { if (settled) return; settled = true; unlisten?.(); this.end(id); handlers.fail(err) }
    }
    const wrapped: Job = { ...job, onMessage: (m) => { if (m.type === 'blob' || m.type === 'done' || m.type === 'hashed' || m.type === 'unsealed' || m.type === 'synced') { settled = true; unlisten?.() } handlers.onMessage(m) } }
    this.jobs.set(id, wrapped)
    thread.jobs++
    this.hold(thread)
    if (batch !== undefined && message.type === 'unseal') batch.push(message)
    else thread.worker.postMessage(message)
    return id
  }

  /** Tells `fn` when `signal` aborts (once); answers how to stop telling it. */
  private onAbort (signal: AbortSignal, fn: () => void): () => void {
    let told = this.aborts.get(signal)
    if (told === undefined) {
      const jobs = new Set<() => void>()
      told = jobs
      this.aborts.set(signal, jobs)
      signal.addEventListener('abort', () => { for (const tell of [...jobs]) tell() }, { once: true })
    }
    const jobs = told
    jobs.add(fn)
    return () => { jobs.delete(fn) }
  }

  private dropped (id: number): void {
    const drop = this.drops.get(id)
    this.drops.delete(id)
    if (drop === undefined) return
    this.hold(drop.thread)
    drop.resolve()
  }

  /**
   * Holds the process for a thread while it has work or owes an answer to a cancel. An unreferenced
   * thread's answer would not keep the process waiting for it: a restore would end with its last
   * file's cancel unanswered (exit 13). Lets an idle one go, so it never keeps a process from
   * ending.
   */
  private hold (thread: Thread): void {
    if (thread.jobs > 0 || [...this.drops.values()].some(d => d.thread === thread)) thread.worker.ref()
    else thread.worker.unref()
  }

  private end (id: number): void {
    const job = this.jobs.get(id)
    if (job === undefined) return
    this.jobs.delete(id)
    job.thread.jobs--
    this.hold(job.thread)
  }

  private send (id: number, message: ToSealer): void {
    this.jobs.get(id)?.thread.worker.postMessage(message)
  }

  /**
   * Starts threads until `count` run (at most `size`), before any job needs them: a thread's
   * start-up then runs beside its caller's other work, not in the first job's way. An idle thread
   * never keeps the process from ending.
   */
  warm (count: number): void {
    while (!this.closed && this.threads.length < Math.min(count, this.size)) this.hold(this.spawn())
  }

  /** The least busy thread, a new one while fewer than `size` run. */
  private pick (): Thread {
    const idle = this.threads.reduce<Thread | undefined>((best, t) => best === undefined || t.jobs < best.jobs ? t : best, undefined)
    if (idle !== undefined && (idle.jobs === 0 || this.threads.length >= this.size)) return idle
    return this.spawn()
  }

  private spawn (): Thread {
    const thread: Thread = { worker: startWorker(import.meta.url, 'seal-worker', { resourceLimits: { maxYoungGenerationSizeMb: YOUNG_MB } }), jobs: 0 }
    const answer = (message: Exclude<FromSealer, { type: 'many' }>): void => {
      if (message.type === 'dropped') { this.dropped(message.id); return }
      const job = this.jobs.get(message.id)
      if (job === undefined) {
        // A part of a job given up: its file goes.
        if (message.type === 'part' && message.path !== null) void rm(message.path, { force: true })
        return
      }
      if (message.type === 'failed') job.fail(failure(message))
      else job.onMessage(message)
    }
    thread.worker.on('message', (message: FromSealer) => {
      if (message.type === 'many') for (const each of message.answers) answer(each)
      else answer(message)
    })
    thread.worker.on('error', (err) => {
      // A thread that dies takes its jobs with it: they fail (and are tried again), and it is replaced on the next job.
      const index = this.threads.indexOf(thread)
      if (index >= 0) this.threads.splice(index, 1)
      for (const [, job] of [...this.jobs]) if (job.thread === thread) job.fail(new Error(`a sealing thread failed: ${err.message}`))
      for (const [id, drop] of [...this.drops]) if (drop.thread === thread) this.dropped(id)
      for (const [id, holder] of [...this.held]) if (holder === thread) this.held.delete(id)
    })
    this.threads.push(thread)
    return thread
  }
}
