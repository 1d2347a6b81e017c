import { type Config } from '../../config/index.js'
import { Scheduler } from '../scheduler.js'
import { contentLeftOut, contentSealing, storeContent, type StoreContentResult } from './store-content.js'
import type { PublishedContent } from '../content-outcome.js'
import { ContentFailures, splitKey, type ContentFailure } from './failures.js'
import type { SyncComponents } from '../sync-components.js'
import type { SyncEventListener } from '../sync-event.js'

/** Quiet after the last change before storing starts: a burst is stored in one pass. */
const QUIET_MS = 2_000
/** Failed files wait at most this long once a pass stored others (the service answers again). */
const RETRY_AFTER_SUCCESS_MS = 5_000
/** Uploads failing for longer than this make `status --check` fail. */
export const CONTENT_FAILING_BOUND_MS = 60 * 60_000
/** Files status lists as uploading at most (a pack gathers up to 4,096). */
const UPLOADING_SHOWN = 5_000

/** The sync components (the repository gives the service, passphrase and sync store) and this machine's name. */
export interface ContentKeeperComponents extends SyncComponents {
  readonly hostname: string
  readonly onEvent?: SyncEventListener
}

/** One storing folder, as status shows it. */
export interface ContentFolderStatus {
  readonly folder: string
  readonly protected: { readonly files: number, readonly bytes: number }
  /** Not stored yet and to be (failed ones included). */
  readonly pending: { readonly files: number, readonly bytes: number }
  readonly failed: number
  /** Never stored: `[content] exclude` or larger than `max_file_size` (as the last pass found them). */
  readonly leftOut: { readonly files: number, readonly bytes: number }
}

export interface ContentStatus {
  readonly running: boolean
  readonly folders: readonly ContentFolderStatus[]
  readonly failures: readonly ContentFailure[]
  /** Files too large for `[content] max_file_size`: indexed, never stored. */
  readonly tooLarge: number
  readonly lastRun: string | null
  readonly lastError: { readonly at: string, readonly message: string, readonly code: string | null } | null
  readonly retryAt: string | null
  /** Bytes a second the running pass uploads; 0 while idle. */
  readonly uploadRate: number
  readonly storedBytesTotal: number
  /** Bytes of live files here that are stored without this device sending them (another device did, or a copy); from the index. */
  readonly savedByDedup: number
  /** Other devices' content index objects refused (damaged or forged): their records are never used. */
  readonly indexRefused: number
  /** The oldest failure has lasted past {@link CONTENT_FAILING_BOUND_MS}. */
  readonly failingTooLong: boolean
  /** Files the running pass is storing (read, sealed, or in a pack not yet sent), by `folder/path`; at most 5,000. */
  readonly uploading: ReadonlyArray<{ readonly folder: string, readonly path: string }>
  /** The bound past which failures make `status --check` fail, in ms. */
  readonly failingBoundMs: number
}

/**
 * Stores the content of storing folders in the background (docs/content-format.md, "Upload"): a
 * pass after each burst of changes, on the hour, and before every publish; a failed pass backs
 * off and runs again, a failing file waits for its own retry while the rest go on.
 */
export class ContentKeeper {
  private readonly storing: Scheduler<StoreContentResult>
  private readonly failures = new ContentFailures()
  private readonly abort = new AbortController()
  private lastRun: string | null = null
  private lastError: ContentStatus['lastError'] = null
  /** The running pass: when it began and what it uploaded so far (the rate status shows). */
  private pass: { readonly started: number, bytes: number } | undefined
  private storedBytesTotal = 0
  /** What dedup saved, read again only when the index, the key or the folders changed. */
  private saved: { readonly key: string, readonly bytes: number } | undefined
  private tooLarge = 0
  private leftOut: ReadonlyMap<string, { files: number, bytes: number }> = new Map()
  /** `folder/path` of what the running pass took up and has not recorded yet. */
  private readonly uploading = new Set<string>()
  /** Wakes a pass when the first failed file's back-off is over: nothing else may come before the hourly one. */
  private retryTimer: NodeJS.Timeout | undefined

  constructor (private readonly components: ContentKeeperComponents) {
    this.storing = new Scheduler<StoreContentResult>({
      timing: () => ({ cron: this.enabled() ? '17 * * * *' : '', quietMs: QUIET_MS }),
      run: async () => await this.run(),
      whenBusy: 'rerun',
      retry: { firstMs: 10_000, maxMs: 15 * 60_000, retryable: () => true }
    })
  }

  start (): void {
    this.loadFailures()
    this.storing.start()
    if (this.enabled()) this.storing.noteChange()
  }

  /** The config now: the repository's, which a reload replaces. */
  private get config (): Config {
    return this.components.repository.config
  }

  /** The repository's config was reloaded: the schedule and the folders apply from now on. */
  async reconfigure (): Promise<void> {
    await this.storing.restart()
    if (this.enabled()) this.storing.noteChange()
  }

  /** Rows changed: a pass once things are quiet. */
  noteChange (): void {
    if (this.enabled()) this.storing.noteChange()
  }

  /** A pass now (a publish waits for it, so what it publishes is stored). */
  async storeNow (): Promise<StoreContentResult | undefined> {
    if (!this.enabled()) return undefined
    return await this.storing.runNow('publish')
  }

  /**
   * A pass now, answered as a publish reports it: what the pass stored, and every live file of
   * this device that is still not stored with why (failing now, waiting for its retry, too large,
   * or the whole pass failed), so `cidsync snapshot` through the daemon never says all is well
   * when it is not. Undefined when no folder stores. `retryFailed` (a person asked: `cidsync
   * snapshot`, the dashboard's button) tries failed files now, not at the end of their back-off:
   * else a snapshot run once the service is fixed stored nothing and said to run it again.
   */
  async storeForPublish (options: { readonly retryFailed?: boolean } = {}): Promise<PublishedContent | undefined> {
    if (!this.enabled()) return undefined
    if (options.retryFailed === true) this.failures.soon(Date.now(), 0)
    let result: StoreContentResult | undefined
    let error: string | undefined
    try {
      result = await this.storing.runNow('publish')
    } catch (err) {
      error = (err as Error).message
    }
    const failing = this.failures.notStored(this.components.index, this.components.deviceId, this.keyId())
    return { storedFiles: result?.storedFiles ?? 0, storedBytes: result?.storedBytes ?? 0, notStored: [...failing, ...(result?.tooLarge ?? [])], ...(error === undefined ? {} : { error }) }
  }

  async stop (): Promise<void> {
    this.abort.abort()
    clearTimeout(this.retryTimer)
    await this.storing.stop()
  }

  /**
   * A pass that failed some files still ends well (they are counted, not thrown), so the
   * scheduler's own retry never comes: a timer brings the next pass when the first of them is due.
   * When files were stored while others failed, the service is answering: those go again soon.
   */
  private wakeForFailures (storedSome: boolean): void {
    clearTimeout(this.retryTimer)
    if (this.abort.signal.aborted || this.failures.size === 0) return
    const now = Date.now()
    if (storedSome) this.failures.soon(now, RETRY_AFTER_SUCCESS_MS)
    const next = this.failures.nextDue()
    this.retryTimer = setTimeout(() => { if (this.enabled()) this.storing.noteChange() }, Math.max(1_000, next - now))
    this.retryTimer.unref()
  }

  status (): ContentStatus {
    const { index, deviceId } = this.components
    const keyId = this.keyId()
    const failures = this.failures.list()
    const folders = this.config.folders.filter(f => f.store === true).map(f => {
      const totals = index.content.folderTotals(deviceId, f.name, keyId)
      const out = this.leftOut.get(f.name) ?? { files: 0, bytes: 0 }
      // The left-out files counted at the last pass; never more than what is unstored now.
      const leftOut = { files: Math.min(out.files, totals.unstored.files), bytes: Math.min(out.bytes, totals.unstored.bytes) }
      return {
        folder: f.name, protected: totals.stored, failed: failures.filter(x => x.folder === f.name).length, leftOut,
        pending: { files: totals.unstored.files - leftOut.files, bytes: totals.unstored.bytes - leftOut.bytes }
      }
    })
    const oldest = this.failures.oldestSince()
    return {
      running: this.storing.busy,
      folders,
      failures,
      tooLarge: this.tooLarge,
      lastRun: this.lastRun,
      lastError: this.lastError,
      retryAt: this.storing.retryAt === undefined ? null : new Date(this.storing.retryAt).toISOString(),
      uploadRate: this.pass === undefined ? 0 : Math.round(this.pass.bytes / Math.max(0.001, (Date.now() - this.pass.started) / 1000)),
      storedBytesTotal: this.storedBytesTotal,
      savedByDedup: this.savedByDedup(keyId),
      indexRefused: this.components.repository.store.contentIndex.refusedCount(),
      failingTooLong: Number.isFinite(oldest) && Date.now() - oldest > CONTENT_FAILING_BOUND_MS,
      uploading: [...this.uploading].slice(0, UPLOADING_SHOWN).map(splitKey),
      failingBoundMs: CONTENT_FAILING_BOUND_MS
    }
  }

  private savedByDedup (keyId: string): number {
    const { index, deviceId } = this.components
    const folders = this.config.folders.filter(f => f.store === true).map(f => f.name)
    const state = this.components.repository.store.contentIndex
    const key = JSON.stringify([index.changeMarker(), keyId, folders, state.takenCount(keyId)])
    if (this.saved?.key !== key) this.saved = { key, bytes: index.content.savedByDedup(deviceId, folders, keyId, state.taken(keyId)) }
    return this.saved.bytes
  }

  /** The files being stored now, and those that failed (with code, message and since), by `folder/path`. */
  activity (): { readonly uploading: ReadonlySet<string>, readonly failed: ReadonlyMap<string, { folder: string, path: string, code: string, message: string, since: string, advice: string }>, readonly notStored: ReturnType<typeof contentLeftOut> } {
    return { uploading: new Set(this.uploading), failed: this.failures.byPath(), notStored: contentLeftOut(this.config) }
  }

  private enabled (): boolean {
    return this.config.folders.some(f => f.store === true)
  }

  private keyId (): string {
    try {
      return contentSealing(this.config, this.components.repository.passphrase).key?.keyId ?? ''
    } catch {
      return ''
    }
  }

  private async run (): Promise<StoreContentResult> {
    const { logger } = this.components
    const started = Date.now()
    const pass = this.pass = { started, bytes: 0 }
    const attempted = new Set<string>()
    try {
      const result = await storeContent(this.components, {
        signal: this.abort.signal,
        skip: (folder, path) => this.failures.waiting(folder, path),
        onProgress: (event) => {
          if (event.type === 'storing:file') {
            attempted.add(`${event.detail.folder}/${event.detail.path}`)
            this.uploading.add(`${event.detail.folder}/${event.detail.path}`)
          } else if (event.type === 'storing:stored') {
            pass.bytes += event.detail.bytes
            for (const key of event.detail.keys) this.uploading.delete(key)
          } else {
            this.uploading.delete(`${event.detail.folder}/${event.detail.path}`)
          }
        }
      })
      const now = Date.now()
      this.failures.passed(attempted, new Set(result.failed.map(f => `${f.folder}/${f.path}`)))
      for (const f of result.failed) this.failures.note(`${f.folder}/${f.path}`, f.code, f.reason, now)
      this.pruneFailures()
      this.wakeForFailures(result.storedFiles > 0)
      this.keepFailures()
      this.tooLarge = result.tooLarge.length
      this.leftOut = result.leftOut
      this.storedBytesTotal += result.storedBytes
      this.lastRun = new Date(now).toISOString()
      this.lastError = null
      if (result.storedFiles > 0) logger.info({ files: result.storedFiles, bytes: result.storedBytes, failed: result.failed.length, ms: now - started }, 'stored content')
      const indexed = result.contentIndex
      if (indexed !== undefined && indexed.taken > 0) logger.info({ files: indexed.taken }, 'files another device stored were recorded here without sending them again (content index)')
      return result
    } catch (err) {
      const code = (err as { code?: unknown }).code
      this.lastError = { at: new Date().toISOString(), message: (err as Error).message, code: typeof code === 'string' ? code : null }
      // A pack that could not be sent fails every file in it: each is shown failed, with why, and waits for its retry.
      if (!this.abort.signal.aborted) {
        const now = Date.now()
        for (const key of this.uploading) this.failures.note(key, this.lastError.code ?? 'ERR_CONTENT_STORE', this.lastError.message, now)
        this.wakeForFailures(false)
        this.keepFailures()
      }
      // Stopped with the daemon: nothing failed, and the next start stores what is left.
      if (this.abort.signal.aborted) logger.info('storing content stopped with the daemon; its next start goes on')
      else logger.error({ err }, 'storing content failed; trying again later')
      throw err
    } finally {
      this.uploading.clear()
      this.pass = undefined
    }
  }

  /** Failures of files gone since, or stored since some other way (`cidsync snapshot` on its own), are over. */
  private pruneFailures (): void {
    this.failures.prune(this.components.index, this.components.deviceId, this.keyId())
  }

  /** The failures the last run left in the state dir (a restart forgets none), those still failing. */
  private loadFailures (): void {
    this.failures.load(this.components.repository.store.contentFailures(), (folder) => this.config.folders.some(x => x.name === folder && x.store === true))
    this.pruneFailures()
  }

  /** Failures left in the state dir, so `cidsync ls` shows them while the daemon is stopped. */
  private keepFailures (): void {
    try {
      this.components.repository.store.noteContentFailures(this.status().failures)
    } catch (err) {
      this.components.logger.warn({ err }, 'the content failures could not be kept in sync.sqlite; status still shows them')
    }
  }
}
