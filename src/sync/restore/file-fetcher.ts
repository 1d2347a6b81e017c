import { rm } from 'node:fs/promises'
import { CID } from 'multiformats/cid'
import { DurableBatch, ObjectCache, ObjectMemory, SealPool, Slots, fetchFile, unsealFile, unsealPackFiles, type UnsealFileInit, type UnsealedFile } from '../../custody/index.js'
import { ContentIntegrityError } from '../../errors.js'
import type { ByteRange, ObjectStore } from '../../store/index.js'
import { CollectEvery } from '../../util/release-memory.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import { packOf, RESTORE_BATCH, RESTORE_MEMORY_BYTES, type Job } from './jobs.js'

export interface FileFetcherInit {
  /** Sealing threads to open files in (jobs.ts, `restoreThreads`); one large file streams on each at once. */
  readonly threads: number
  /** Where this process keeps scratch objects: removed at close. */
  readonly scratchDir: string
  readonly signal?: AbortSignal
  /** Bytes written, for progress. */
  readonly onBytes: (bytes: number) => void
  /** Told once a job's file is in its place, renamed after its batch was made durable. */
  readonly written: (job: Job) => void
  /** Told of a job's failure; throws to give the whole run up. */
  readonly failed: (err: unknown, job: Job) => void
}

/** Files to fetch from which a run starts every sealing thread at once. */
const WARM_EVERY_THREAD_FILES = 16

/**
 * Brings files' bytes back, checked jobs in: a file's objects fetched, verified, unsealed on the
 * sealing threads and written to a temp; the temps fsynced a batch at a time and renamed only
 * then (docs/content-format.md, "What a crash leaves"). Its owner closes it.
 */
export class FileFetcher {
  private readonly pool: SealPool
  private readonly streaming: Slots
  // What a streamed file leaves (its slots, its lent blocks) lies outside V8's heap, which counts it
  // late: a collection every 64 MiB of them keeps the packs that follow from piling on top.
  private readonly collect = new CollectEvery()
  private readonly durable: DurableBatch
  private readonly objects: ObjectCache
  // Sealed objects are held in memory, each hashed in a sealing thread before anything reads it.
  // The embedded service's own store skips that hash (`sealed`): each blob's tags and plaintext
  // CID check every byte.
  private readonly memory: ObjectMemory
  private warmed = false
  /** The store streams an object's blocks (the embedded service's): large files are read so, not held whole. */
  readonly streams: boolean

  constructor (private readonly store: ObjectStore, private readonly init: FileFetcherInit) {
    this.pool = new SealPool(init.threads)
    this.streaming = new Slots(init.threads)
    this.durable = new DurableBatch(this.pool, RESTORE_BATCH)
    this.streams = store.stream !== undefined
    this.objects = new ObjectCache(init.scratchDir, async (cid, destination, options) => {
      // Scratch, verified, read by this process and removed: not fsynced (a power cut ends the reader too).
      await store.getFile(cid, options.profile ?? SNAPSHOT_PROFILE, destination, { ...options, signal: options.signal, durable: false })
    })
    this.memory = new ObjectMemory(RESTORE_MEMORY_BYTES, async (cid, options) => await store.getBytes(cid, SNAPSHOT_PROFILE, {
      ...options, sealed: true, hash: async (slabs) => await this.pool.hashObject(slabs, options.signal), hashing: () => this.pool.hashStream(options.signal)
    }))
  }

  /**
   * The threads start as soon as a file is to be fetched: their start-up runs while the other
   * files are checked. Every thread for a run of many files; one for a few, where another's start
   * would cost more than the work it takes (a second starts anyway once two files are brought at
   * once). A run with nothing to fetch starts none.
   */
  warm (files: number): void {
    if (this.warmed) return
    this.warmed = true
    this.pool.warm(files >= WARM_EVERY_THREAD_FILES ? files : 1)
  }

  /** Tells the memory how many readers each pack has, and how far they read, `ordered` as they come. */
  expect (ordered: readonly Job[]): void {
    for (const job of ordered) {
      const pack = packOf(job)
      if (pack === undefined) continue
      const [, offset, length] = job.record.objects[0] as readonly [string, number, number]
      this.memory.expect(pack, 1, offset + length)
    }
  }

  /** Brings one file read on its own (plain, large or of several objects). */
  async bring (job: Job): Promise<void> {
    try {
      const file = this.fileOf(job)
      if (job.record.sealing === 'none') {
        await fetchFile({ ...file, objects: this.objects })
        this.init.written(job)
        return
      }
      const streamOf = this.store.stream
      // Lent: unsealFile copies or sends each chunk before it asks for the next.
      const stream = job.streamed && streamOf !== undefined ? (cid: string, maxBytes: number, signal?: AbortSignal, range?: ByteRange) => streamOf(cid, { maxBytes, signal, lend: true, range, sealed: true }) : undefined
      const { memory, pool } = this
      const unsealed = stream === undefined || job.byRange === true
        ? await unsealFile({ ...file, memory, pool, byRange: job.byRange, stream })
        : await this.streaming.run(async () => await unsealFile({ ...file, memory, pool, stream }), this.init.signal).finally(() => { this.collect.note(job.row.size) })
      await this.durably(job, unsealed)
    } catch (err) {
      this.init.failed(err, job)
    }
  }

  /** Brings files of one pack, read once and sent to a sealing thread together. */
  async bringPack (jobs: readonly Job[]): Promise<void> {
    const answers = await unsealPackFiles(jobs.map(job => this.fileOf(job)), this.memory, this.pool, this.init.signal)
    for (const [i, job] of jobs.entries()) {
      const answer = answers[i]
      try {
        if (answer === undefined || answer instanceof Error) throw answer ?? new ContentIntegrityError(`${job.row.folder}/${job.row.path} had no answer from its thread`)
        await this.durably(job, answer)
      } catch (err) {
        try {
          this.init.failed(err, job)
        } catch (stopped) {
          // The run was given up: the batch's files verified but not yet added are no batch's to
          // remove, so they are removed here (their descriptors close with the threads).
          await Promise.all(answers.slice(i + 1).map(async (left) => { if (left !== undefined && !(left instanceof Error)) await rm(left.temp, { force: true }) }))
          throw stopped
        }
      }
    }
  }

  /** Makes the last batch durable and renamed. */
  async finish (): Promise<void> {
    await this.durable.finish()
  }

  /** Waits for the batch being synced; renames nothing more. */
  async drain (): Promise<void> {
    await this.durable.drain()
  }

  /** Stops the threads and removes every temp and scratch object left. */
  async close (): Promise<void> {
    try {
      await this.pool.close()
      await this.durable.abandon()
    } finally {
      await this.objects.clear()
    }
  }

  private async durably (job: Job, unsealed: UnsealedFile): Promise<void> {
    // Its outcome comes once its batch is durable and renamed; this slot goes on to the next file.
    await this.durable.add(unsealed, (err) => { if (err === undefined) this.init.written(job); else this.init.failed(err, job) })
  }

  private fileOf (job: Job): Omit<UnsealFileInit, 'memory' | 'pool'> {
    const { row, record, target } = job
    return {
      record,
      row: { cid: CID.parse(row.cid as string), size: row.size, mtimeMs: row.mtimeMs, profile: job.profile },
      target,
      targetDir: job.targetDir,
      snapshotKey: job.key,
      replace: job.replace,
      attrs: job.attrs,
      signal: this.init.signal,
      // A slice that ended inside a sealed chunk wrote nothing yet: no line for it (--json printed three of four as 0).
      onBytes: (bytes: number) => { if (bytes > 0) this.init.onBytes(bytes) }
    }
  }
}

