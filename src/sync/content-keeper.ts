import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import type { Index } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import { Scheduler } from './scheduler.js'
import { contentLeftOut, contentSealing, storeContent, type StoreContentResult } from './store-content.js'
import type { NotStored, PublishedContent } from './content-outcome.js'
import type { SyncStore } from './sync-store.js'
import type { SyncEventListener } from './sync-event.js'
import { NotReadyError } from '../errors.js'
import { backoffMs } from '../util/backoff.js'

/** Quiet after the last change before storing starts: a burst is stored in one pass. */
const QUIET_MS = 2_000
/** A failing file waits this long, doubling with each failure, up to the most. */
const FILE_RETRY_FIRST_MS = 30_000
const FILE_RETRY_MAX_MS = 60 * 60_000
/** Failed files wait at most this long once a pass stored others (the service answers again). */
const RETRY_AFTER_SUCCESS_MS = 5_000
/** Uploads failing for longer than this make `status --check` fail. */
export const CONTENT_FAILING_BOUND_MS = 60 * 60_000
/** Files status lists as uploading at most (a pack gathers up to 4,096). */
const UPLOADING_SHOWN = 5_000

export interface ContentKeeperComponents {
  readonly index: Index
  readonly logger: Logger
  readonly deviceId: string
  readonly hostname: string
  readonly clients: () => ServiceClients | undefined
  readonly store: () => SyncStore
  readonly onEvent?: SyncEventListener
}

/** A file whose content could not be stored, waiting for its retry. */
export interface ContentFailure {
  readonly folder: string
  readonly path: string
  readonly code: string
  readonly message: string
  readonly since: string
  readonly attempts: number
  readonly retryAt: string
  /** What to do about it. */
  readonly advice: string
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
  /** Bytes a second of the last run that stored anything. */
  readonly uploadRate: number
  readonly storedBytesTotal: number
  /** Bytes of live files here that are stored without this device sending them (another device did, or a copy). */
  readonly savedByDedup: number
  /** The oldest failure has lasted past {@link CONTENT_FAILING_BOUND_MS}. */
  readonly failingTooLong: boolean
  /** Files the running pass is storing (read, sealed, or in a pack not yet sent), by `folder/path`; at most 5,000. */
  readonly uploading: ReadonlyArray<{ readonly folder: string, readonly path: string }>
  /** The bound past which failures make `status --check` fail, in ms. */
  readonly failingBoundMs: number
}

interface Failure { code: string, message: string, since: number, attempts: number, retryAt: number }

/**
 * Stores the content of storing folders in the background (docs/content-format.md, "Upload"): a
 * pass after each burst of changes, on the hour, and before every publish; a failed pass backs
 * off and runs again, a failing file waits for its own retry while the rest go on.
 */
export class ContentKeeper {
  private readonly storing: Scheduler<StoreContentResult>
  private readonly failures = new Map<string, Failure>()
  private readonly abort = new AbortController()
  private lastRun: string | null = null
  private lastError: ContentStatus['lastError'] = null
  private uploadRate = 0
  private storedBytesTotal = 0
  private tooLarge = 0
  private leftOut: ReadonlyMap<string, { files: number, bytes: number }> = new Map()
  /** `folder/path` of what the running pass took up and has not recorded yet. */
  private readonly uploading = new Set<string>()
  /** Wakes a pass when the first failed file's back-off is over: nothing else may come before the hourly one. */
  private retryTimer: NodeJS.Timeout | undefined

  constructor (private readonly components: ContentKeeperComponents, private config: Config) {
    this.storing = new Scheduler<StoreContentResult>({
      timing: () => ({ cron: this.enabled() ? '17 * * * *' : '', quietMs: QUIET_MS }),
      ready: () => { if (this.components.clients() === undefined) throw new NotReadyError('not ready: storing content waits for the service to be reached', 5) },
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

  async reconfigure (config: Config): Promise<void> {
    this.config = config
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
    if (options.retryFailed === true) {
      const now = Date.now()
      for (const failure of this.failures.values()) failure.retryAt = Math.min(failure.retryAt, now)
    }
    let result: StoreContentResult | undefined
    let error: string | undefined
    try {
      result = await this.storing.runNow('publish')
    } catch (err) {
      error = (err as Error).message
    }
    const { index, deviceId } = this.components
    const keyId = this.keyId()
    const failing = [...this.failures.entries()].flatMap(([key, f]): NotStored[] => {
      const slash = key.indexOf('/')
      const folder = key.slice(0, slash)
      const path = key.slice(slash + 1)
      // A failure of a file since deleted, or stored since, is no longer a file missing.
      const row = index.entries.get(deviceId, folder, path)
      if (row === undefined || row.deleted || row.cid === null || index.content.has(row.cid, keyId)) return []
      return [{ folder, path, reason: `${f.message} (tried ${f.attempts} times; next at ${new Date(f.retryAt).toISOString()})`, code: f.code }]
    })
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
    if (storedSome) for (const failure of this.failures.values()) failure.retryAt = Math.min(failure.retryAt, now + RETRY_AFTER_SUCCESS_MS)
    let next = Infinity
    for (const failure of this.failures.values()) next = Math.min(next, failure.retryAt)
    this.retryTimer = setTimeout(() => { if (this.enabled()) this.storing.noteChange() }, Math.max(1_000, next - now))
    this.retryTimer.unref()
  }

  status (): ContentStatus {
    const { index, deviceId } = this.components
    const keyId = this.keyId()
    const failures = [...this.failures.entries()].map(([key, f]) => {
      return { ...splitKey(key), code: f.code, message: f.message, since: new Date(f.since).toISOString(), attempts: f.attempts, retryAt: new Date(f.retryAt).toISOString(), advice: contentFailureAdvice(f.code) }
    })
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
    const own = index.content.totals(deviceId).bytes
    const protectedBytes = folders.reduce((sum, f) => sum + f.protected.bytes, 0)
    const oldest = Math.min(...[...this.failures.values()].map(f => f.since))
    return {
      running: this.storing.busy,
      folders,
      failures,
      tooLarge: this.tooLarge,
      lastRun: this.lastRun,
      lastError: this.lastError,
      retryAt: this.storing.retryAt === undefined ? null : new Date(this.storing.retryAt).toISOString(),
      uploadRate: this.uploadRate,
      storedBytesTotal: this.storedBytesTotal,
      savedByDedup: Math.max(0, protectedBytes - own),
      failingTooLong: Number.isFinite(oldest) && Date.now() - oldest > CONTENT_FAILING_BOUND_MS,
      uploading: [...this.uploading].slice(0, UPLOADING_SHOWN).map(splitKey),
      failingBoundMs: CONTENT_FAILING_BOUND_MS
    }
  }

  /** The files being stored now, and those that failed (with code, message and since), by `folder/path`. */
  activity (): { readonly uploading: ReadonlySet<string>, readonly failed: ReadonlyMap<string, { folder: string, path: string, code: string, message: string, since: string, advice: string }>, readonly notStored: ReturnType<typeof contentLeftOut> } {
    const failed = new Map<string, { folder: string, path: string, code: string, message: string, since: string, advice: string }>()
    for (const [key, f] of this.failures) failed.set(key, { ...splitKey(key), code: f.code, message: f.message, since: new Date(f.since).toISOString(), advice: contentFailureAdvice(f.code) })
    return { uploading: new Set(this.uploading), failed, notStored: contentLeftOut(this.config) }
  }

  private enabled (): boolean {
    return this.config.folders.some(f => f.store === true)
  }

  private keyId (): string {
    try {
      return contentSealing(this.config, process.env.CIDSYNC_SNAPSHOT_PASSPHRASE).key?.keyId ?? ''
    } catch {
      return ''
    }
  }

  private async run (): Promise<StoreContentResult> {
    const { index, logger, deviceId, hostname } = this.components
    const clients = this.components.clients() as ServiceClients
    const started = Date.now()
    const attempted = new Set<string>()
    try {
      const result = await storeContent({ index, clients, store: this.components.store(), logger, deviceId, hostname }, {
        config: this.config,
        passphrase: process.env.CIDSYNC_SNAPSHOT_PASSPHRASE,
        signal: this.abort.signal,
        skip: (folder, path) => (this.failures.get(`${folder}/${path}`)?.retryAt ?? 0) > Date.now(),
        onProgress: (event) => {
          if (event.type === 'file') {
            attempted.add(`${event.folder}/${event.path}`)
            this.uploading.add(`${event.folder}/${event.path}`)
          } else if (event.type === 'stored') {
            for (const key of event.keys) this.uploading.delete(key)
          } else {
            this.uploading.delete(`${event.folder}/${event.path}`)
          }
        }
      })
      const now = Date.now()
      // A file that failed again keeps when its failures began and how many tries it had: the
      // back-off grows, and `failingTooLong` sees the whole span, not the last try.
      const failedAgain = new Set(result.failed.map(f => `${f.folder}/${f.path}`))
      for (const key of attempted) if (!failedAgain.has(key)) this.failures.delete(key)
      for (const f of result.failed) this.noteFailure(`${f.folder}/${f.path}`, f.code, f.reason, now)
      this.pruneFailures()
      this.wakeForFailures(result.storedFiles > 0)
      this.keepFailures()
      this.tooLarge = result.tooLarge.length
      this.leftOut = result.leftOut
      this.storedBytesTotal += result.storedBytes
      if (result.storedBytes > 0) this.uploadRate = Math.round(result.storedBytes / Math.max(0.001, (now - started) / 1000))
      this.lastRun = new Date(now).toISOString()
      this.lastError = null
      if (result.storedFiles > 0) logger.info({ files: result.storedFiles, bytes: result.storedBytes, failed: result.failed.length, ms: now - started }, 'stored content')
      return result
    } catch (err) {
      const code = (err as { code?: unknown }).code
      this.lastError = { at: new Date().toISOString(), message: (err as Error).message, code: typeof code === 'string' ? code : null }
      // A pack that could not be sent fails every file in it: each is shown failed, with why, and waits for its retry.
      if (!this.abort.signal.aborted) {
        const now = Date.now()
        for (const key of this.uploading) this.noteFailure(key, this.lastError.code ?? 'ERR_CONTENT_STORE', this.lastError.message, now)
        this.wakeForFailures(false)
        this.keepFailures()
      }
      logger.error({ err }, 'storing content failed; trying again later')
      throw err
    } finally {
      this.uploading.clear()
    }
  }

  /** Failures of files gone since, or stored since some other way (`cidsync snapshot` on its own), are over. */
  private pruneFailures (): void {
    const { index, deviceId } = this.components
    const keyId = this.keyId()
    for (const key of [...this.failures.keys()]) {
      const { folder, path } = splitKey(key)
      const row = index.entries.get(deviceId, folder, path)
      if (row === undefined || row.deleted || row.cid === null || index.content.has(row.cid, keyId)) this.failures.delete(key)
    }
  }

  private noteFailure (key: string, code: string, message: string, now: number): void {
    const before = this.failures.get(key)
    const attempts = (before?.attempts ?? 0) + 1
    const wait = backoffMs({ firstMs: FILE_RETRY_FIRST_MS, maxMs: FILE_RETRY_MAX_MS, jitter: 'spread' }, attempts)
    this.failures.set(key, { code, message, since: before?.since ?? now, attempts, retryAt: now + wait })
  }

  /**
   * The failures the last run left in the state dir: a restart neither hides how long a file has
   * been failing (`status --check` still fails) nor forgets to show it.
   */
  private loadFailures (): void {
    let list: unknown
    try {
      list = JSON.parse(this.components.store().contentFailures() ?? '[]')
    } catch {
      return
    }
    for (const f of Array.isArray(list) ? list as Array<Record<string, unknown>> : []) {
      const since = Date.parse(String(f.since))
      const retryAt = Date.parse(String(f.retryAt))
      if (typeof f.folder !== 'string' || typeof f.path !== 'string' || typeof f.code !== 'string' || typeof f.message !== 'string' || !Number.isFinite(since)) continue
      if (!this.config.folders.some(x => x.name === f.folder && x.store === true)) continue
      this.failures.set(`${f.folder}/${f.path}`, { code: f.code, message: f.message, since, attempts: typeof f.attempts === 'number' ? f.attempts : 1, retryAt: Number.isFinite(retryAt) ? retryAt : Date.now() })
    }
    this.pruneFailures()
  }

  /** Failures left in the state dir, so `cidsync ls` shows them while the daemon is stopped. */
  private keepFailures (): void {
    try {
      this.components.store().noteContentFailures(this.status().failures)
    } catch (err) {
      this.components.logger.warn({ err }, 'the content failures could not be kept in sync.sqlite; status still shows them')
    }
  }
}

/** What to do about a file whose content failed to store, by the failure's code. */
export function contentFailureAdvice (code: string): string {
  switch (code) {
    case 'EACCES':
    case 'EPERM': return 'the file cannot be read: fix its permissions; it is tried again'
    case 'EIO': return 'the disk could not read the file: check the disk; it is tried again'
    case 'ERR_CONTENT_TOO_LARGE': return 'raise [content] max_file_size, or exclude it with [content] exclude'
    case 'ERR_SNAPSHOT_KEY': return 'the snapshot key cannot be read: check snapshot.key or CIDSYNC_SNAPSHOT_PASSPHRASE'
    case 'ERR_REMOTE_UNAUTHORIZED': return 'the service refused the credentials: `cidsync login`; it is tried again'
    case 'ERR_REMOTE_NETWORK': return 'the service cannot be reached: check that it is up and this machine reaches it; it is tried again'
    default: return 'it is tried again with back-off; if it keeps failing, check the service (`cidsync status`) and the log'
  }
}

function splitKey (key: string): { folder: string, path: string } {
  const slash = key.indexOf('/')
  return { folder: key.slice(0, slash), path: key.slice(slash + 1) }
}
