import { hostname } from 'node:os'
import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import type { Index } from '../index/index.js'
import { ChangeWriter, type WriterState } from './change-writer.js'
import { DriftCheck, type DriftResult, type DriftStatus } from './drift-check.js'
import type { WatchEventListener } from './watch-event.js'
import { FolderIndexer, type FolderProgress } from './folder-indexer.js'
import { COMMAND_INLINE_HASH_BYTES, HashPool, type HashingProgress } from './hash-pool.js'
import { releaseMemory } from '../util/release-memory.js'

/**
 * `scanning` while the watches are set up and until the index is current, then `watching`;
 * `degraded` when a folder is in error. `verifying` is in the list, but a watcher never enters it:
 * there is no second pass over the files.
 */
/** Every state a watcher can be in, in the order it passes them (metrics list each). */
export const WATCHER_STATES = ['starting', 'scanning', 'verifying', 'watching', 'degraded', 'stopped'] as const
export type WatcherState = typeof WATCHER_STATES[number]

/** Entries a command's catch-up walks on its own thread before it walks the folder on a thread instead. */
const COMMAND_INLINE_SCAN_ENTRIES = 2_000

export interface WatcherStatus {
  readonly state: WatcherState
  readonly folders: readonly FolderProgress[]
  /** When the startup scan finished and every changed file was hashed and written (ms since epoch). */
  readonly currentAt: number | undefined
  readonly rowsWritten: number
  readonly writeErrors: number
  /** Index writes: ok, or failing and retried (with the last error and what to do). */
  readonly writer: WriterState
  readonly drift: DriftStatus
  /** The files being hashed now and how much of them is read (a large file's progress). */
  readonly hashing: HashingProgress
}

export interface WatcherComponents {
  readonly index: Index
  readonly logger: Logger
  readonly deviceId: string
}

export interface WatcherInit {
  readonly folders: Config['folders']
  readonly profile: Config['cidProfile']
  readonly hashWorkers: number
  /**
   * A one-off command's catch-up (`snapshot`), never a daemon's: a small folder is walked, and a
   * few small files hashed, on the calling thread, without starting a thread for them.
   */
  readonly command?: boolean
  readonly settleMs: number
  /**
   * Told as the index is written ({@link WatchEvent}): each commit that changed rows (the change
   * note a publish is scheduled from), each failed write, and once when the index cannot be written
   * any more (the owner then stops the process).
   */
  readonly onProgress?: WatchEventListener
  /** Between drift checks; 0 or absent = only on request ({@link Watcher.checkDrift}). */
  readonly rescanIntervalMs?: number
  /** How long changes are gathered before a commit (250 ms by default); tests widen it to hold a race open. */
  readonly flushMs?: number
  /** Index write back-off and skipped-file retry, shortened by tests. */
  readonly retry?: { readonly writeMinMs?: number, readonly writeMaxMs?: number, readonly skipMinMs?: number, readonly maxPending?: number }
}

/**
 * Every watched folder, one hashing pool and one batched writer. `start()` resolves once the
 * watches are up; `current()` once the index matches the disk.
 */
export class Watcher {
  private readonly pool: HashPool
  private readonly writer: ChangeWriter
  private readonly drift: DriftCheck
  private folders: FolderIndexer[]
  private state: WatcherState = 'starting'
  private scanned: Promise<unknown> | undefined
  private currentAt: number | undefined
  private rowsWritten = 0
  private writeErrors = 0

  constructor (private readonly components: WatcherComponents, private readonly init: WatcherInit) {
    const { index, logger, deviceId } = components
    index.entries.registerDevice(deviceId, hostname())
    this.pool = new HashPool({ workers: init.hashWorkers, inlineBytes: init.command === true ? COMMAND_INLINE_HASH_BYTES : 0 })
    this.writer = new ChangeWriter(index.entries, deviceId, {
      flushMs: init.flushMs,
      retryMinMs: init.retry?.writeMinMs,
      retryMaxMs: init.retry?.writeMaxMs,
      maxPending: init.retry?.maxPending,
      onProgress: (event) => {
        switch (event.type) {
          case 'index.committed': this.rowsWritten += event.rows; break
          case 'index.write-failed':
            this.writeErrors++
            logger.error({ err: event.error, pending: event.pending }, event.error.message)
            break
          case 'index.fatal': logger.fatal({ err: event.error }, event.error.message)
        }
        init.onProgress?.(event)
      }
    })
    this.folders = init.folders.map(folder => this.indexerFor(folder))
    this.drift = new DriftCheck({
      folders: () => this.folders,
      intervalMs: init.rescanIntervalMs ?? 0,
      logger,
      written: async () => { this.writer.flush(); await this.writer.drained() }
    })
  }

  private indexerFor (folder: Config['folders'][number]): FolderIndexer {
    const { index, logger, deviceId } = this.components
    return new FolderIndexer(
      { entries: index.entries, pool: this.pool, writer: this.writer, logger, deviceId },
      { folder, profile: this.init.profile, settleMs: this.init.settleMs, skipRetryMs: this.init.retry?.skipMinMs, inlineScanEntries: this.init.command === true ? COMMAND_INLINE_SCAN_ENTRIES : undefined }
    )
  }

  /**
   * Applies a new list of folders while running (SIGHUP): new ones are scanned and watched; removed
   * ones stop and their rows are marked deleted; a changed one (path, ignore rules) starts over,
   * its scan settling the rows. Unchanged folders are not touched.
   */
  async setFolders (folders: Config['folders']): Promise<{ added: string[], removed: string[] }> {
    const same = (a: Config['folders'][number], b: Config['folders'][number]): boolean => JSON.stringify(a) === JSON.stringify(b)
    const keep = this.folders.filter(f => folders.some(c => same(c, f.config)))
    const removed = this.folders.filter(f => !keep.includes(f))
    const added = folders.filter(c => !keep.some(f => same(c, f.config))).map(c => this.indexerFor(c))
    for (const folder of removed) {
      await folder.stop()
      if (!folders.some(c => c.name === folder.name)) {
        const { index, deviceId } = this.components
        for (const entry of index.entries.list({ deviceId, prefix: `${folder.name}/` })) this.writer.write({ kind: 'delete', folder: folder.name, path: entry.path })
      }
    }
    this.writer.flush()
    this.folders = [...keep, ...added]
    await Promise.all(added.map(async f => { await f.start() }))
    return { added: added.map(f => f.name), removed: removed.map(f => f.name) }
  }

  /**
   * Sets up every folder's watches, then scans it and hashes what changed (the index is then
   * current: {@link current}). Resolves once watching, which is then.
   */
  async start (): Promise<void> {
    this.state = 'scanning'
    const started = Date.now()
    this.scanned = Promise.all(this.folders.map(async f => { await f.start() }))
    await this.current()
    if ((this.state as WatcherState) === 'stopped') return
    this.state = 'watching'
    this.drift.start()
    releaseMemory()
    const inError = this.folders.filter(f => f.progress().state === 'error').map(f => f.name)
    this.components.logger.info({ folders: this.folders.length, inError, ms: Date.now() - started, rssBytes: process.memoryUsage.rss() }, 'watching')
  }

  /** Brings the index up to date with the folders once, without watching (a command with no daemon). */
  async catchUp (): Promise<void> {
    this.state = 'scanning'
    this.scanned = Promise.all(this.folders.map(async f => { await f.scan() }))
    await this.current()
  }

  /** Resolves once the startup scan is done and every change it found is hashed and committed. */
  async current (): Promise<void> {
    await this.scanned
    for (;;) {
      await Promise.all(this.folders.map(async f => { await f.idle() }))
      this.writer.flush()
      // While writes fail and are retried, the index is not current yet.
      await this.writer.drained()
      if ((this.state as WatcherState) === 'stopped') return
      if (this.folders.every(f => f.progress().toHash === 0)) break
    }
    // A scan cut short by a stop leaves the index behind the disk: never call that current.
    if (this.state !== 'stopped') this.currentAt ??= Date.now()
  }

  status (): WatcherStatus {
    const folders = this.folders.map(f => f.progress())
    const state = this.state !== 'stopped' && folders.some(f => f.state === 'error') ? 'degraded' : this.state
    return { state, folders, currentAt: this.currentAt, rowsWritten: this.rowsWritten, writeErrors: this.writeErrors, writer: this.writer.state(), drift: this.drift.status(), hashing: this.pool.progress() }
  }

  /** Bytes of the files hashed since the watcher started: what a catch-up found new or changed. */
  get hashedBytes (): number {
    return this.pool.hashedBytes
  }

  /** Walks every watched folder afresh and repairs the rows that differ (see {@link DriftCheck}). */
  async checkDrift (): Promise<DriftResult> {
    return await this.drift.run('request')
  }

  /** Closes the watches, stops the threads (a file cut off mid-hash is hashed again at the next start), commits the batch. */
  async stop (): Promise<void> {
    this.state = 'stopped'
    this.drift.stop()
    await Promise.all(this.folders.map(async f => { await f.stop() }))
    await this.pool.close()
    const unwritten = this.writer.close()
    if (unwritten > 0) this.components.logger.error({ unwritten }, `${unwritten} index changes could not be written before stopping: the next start's scan finds them again`)
  }
}
