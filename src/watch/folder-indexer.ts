import type { Logger } from 'pino'
import type { CidProfileName } from '../content/index.js'
import type { EntryStore } from '../index/index.js'
import type { FolderConfig } from '../config/index.js'
import { FolderError } from '../errors.js'
import type { ChangeWriter } from './change-writer.js'
import { FolderWatcher, skippedByWatchError } from './folder-watcher.js'
import type { HashPool } from './hash-pool.js'
import { createIgnoreMatcher } from './ignore.js'
import { RootGuard, type RootState } from './root-guard.js'
import { NewDirs } from './new-dirs.js'
import { NAME_NOT_UTF8, SkippedFiles } from './skipped-files.js'
import { PathStage } from './path-stage.js'
import { DirRescan } from './dir-rescan.js'
import { excludedPaths, FolderScan } from './folder-scan.js'
import type { FolderProgress, FolderState } from './folder-progress.js'

export type { FolderProgress, FolderState } from './folder-progress.js'

export interface FolderIndexerComponents {
  readonly entries: EntryStore
  readonly pool: HashPool
  readonly writer: ChangeWriter
  readonly logger: Logger
  readonly deviceId: string
}

export interface FolderIndexerInit {
  readonly folder: FolderConfig
  readonly profile: CidProfileName
  readonly settleMs: number
  /** The first retry of a skipped file (doubling from there); tests shorten it. */
  readonly skipRetryMs?: number
  /** A folder of at most this many entries is scanned on the calling thread (a command's; ScanOptions.inlineEntries). */
  readonly inlineScanEntries?: number
}

/**
 * Keeps one folder's rows true to the disk: the folder's lifecycle (watches, then the startup
 * scan, then live; away and back when its root is), feeding every path it hears of into its
 * {@link PathStage} (settle, look, hash, write). One signal stops it all: the scan thread, the
 * walks, the stage's timers, the skipped paths' retries and the root checks end with it, and an
 * answer that arrives after it writes nothing.
 */
export class FolderIndexer {
  /** Aborted by {@link stop}: the one way everything this folder started is cancelled. */
  private readonly stopping = new AbortController()
  private readonly signal = this.stopping.signal
  /** Paths that could not be read, retried until they can (or are gone). */
  private readonly skipped: SkippedFiles
  private readonly stage: PathStage
  private readonly dirs: DirRescan
  private readonly scanner: FolderScan
  private readonly watcher: FolderWatcher
  private readonly newDirs: NewDirs
  private readonly root: RootGuard
  private state: FolderState = 'starting'
  private error: string | undefined
  private idleWaiters: Array<() => void> = []
  /** The folder's root is away (missing, replaced, unmounted): the error clears when it is back. */
  private lost = false
  private restarting: Promise<void> | undefined

  constructor (private readonly components: FolderIndexerComponents, private readonly init: FolderIndexerInit) {
    const { folder } = init
    const { logger } = components
    const { signal } = this
    const where = { root: folder.path, folder: folder.name, followSymlinks: folder.followSymlinks, signal }
    const ignore = createIgnoreMatcher(folder.ignore, excludedPaths(folder))
    const skipped = this.skipped = new SkippedFiles({ onDue: (rel, kind) => { this.dirs.due(rel, kind) }, minRetryMs: init.skipRetryMs, signal, logger, folder: folder.name })
    const stage = this.stage = new PathStage({ ...components, skipped }, {
      ...where, profile: init.profile, settleMs: init.settleMs, ignore,
      rootIntact: async () => await this.root.intact(),
      rootInDoubt: () => { this.root.schedule(0) },
      retryDir: (rel) => { this.dirs.due(rel, 'dir') },
      onSettled: () => { this.wakeIdle() }
    })
    const watcher = this.watcher = new FolderWatcher({ root: folder.path, ignore, followSymlinks: folder.followSymlinks }, {
      // A file added or removed moves its directory's mtime: the directory's row is looked at too.
      onPath: (rel) => { stage.settle(rel) },
      onDirAdded: (rel) => { stage.settle(`${rel}/`); this.newDirs.add(rel) },
      onDirRemoved: (rel) => { this.dirs.removed(rel) },
      onDirChanged: (rel) => { this.dirs.changed(rel) },
      onRootChanged: () => { this.root.schedule(50) },
      onError: (err) => { this.watchFailed(err) },
      // A link not followed is an entry of its own (a symlink row): looked at as a file's path is.
      onSymlink: (rel) => { stage.settle(rel) }
    })
    this.scanner = new FolderScan({ ...components, stage, skipped }, { folder, profile: init.profile, ignore, signal, inlineEntries: init.inlineScanEntries })
    this.dirs = new DirRescan({ ...where, ...components, ignore, watcher, stage, skipped })
    this.newDirs = new NewDirs({
      ...where, ignore, watcher, logger,
      onFile: (rel) => { stage.settle(rel, 0) },
      onBadName: (rel) => { skipped.skip(rel, NAME_NOT_UTF8) },
      onUnreadable: (rel, code, kind) => { skipped.skip(rel, code, kind) },
      onSymlink: (rel) => { stage.settle(rel, 0) },
      onIdle: () => { this.wakeIdle() }
    })
    // Live rows of this device in the folder: an empty directory in its place then means an unmount.
    const hasRows = (): boolean => (components.entries.totals(components.deviceId).find(t => t.folder === folder.name)?.files ?? 0) > 0
    this.root = new RootGuard({ path: folder.path, signal, hasRows, onCheck: async (state) => { await this.onRootCheck(state) } })
  }

  get name (): string {
    return this.init.folder.name
  }

  get config (): FolderConfig {
    return this.init.folder
  }

  /**
   * Watches the folder, then scans it (see {@link scan}): a change made once a directory's watch
   * is up is reported by it, one made before is found by the scan, which reads every directory
   * after its watch, so no second pass over the files is needed. Resolves when the scan is done;
   * hashing what it found goes on (see {@link idle}).
   */
  async start (): Promise<void> {
    await this.untilStopped(this.startOnce())
  }

  /**
   * The startup scan, on a thread of its own: every file whose size or mtime moved is queued for
   * hashing, every row whose file is gone is looked at. Resolves when the scan is done (hashing
   * may still run: see {@link idle}): true, or false when it did not run to its end (stopped, the
   * folder missing).
   */
  async scan (): Promise<boolean> {
    return await this.untilStopped(this.scanOnce()) ?? false
  }

  /**
   * The drift check's pass over a watched folder: a fresh scan compared with the rows, every
   * difference queued for repair as at start (files hashed, vanished ones looked at and tombstoned).
   * Answers how many differences it found that no event had already queued, or undefined when the
   * folder is not being watched or its root is missing (an unmounted disk is never taken for deletes).
   */
  async checkDrift (): Promise<number | undefined> {
    if (this.state !== 'watching' || !(await this.root.present())) return undefined
    return await this.untilStopped(this.scanner.drift(async () => this.state === 'watching' && await this.root.present()))
  }

  /** Resolves when nothing is settling or hashing: the folder's rows match the disk as last seen. */
  async idle (): Promise<void> {
    if (this.isIdle()) return
    await new Promise<void>(resolve => this.idleWaiters.push(resolve))
  }

  /** Everything this folder started ends (see {@link stopping}); the watches are closed. */
  async stop (): Promise<void> {
    this.state = 'stopped'
    this.stopping.abort()
    await this.watcher.close()
    this.wakeIdle()
  }

  progress (): FolderProgress {
    const { files, bytes } = this.stage.hashed
    const { name, state, error, skipped } = this
    return { name, path: this.init.folder.path, state, scanned: this.scanner.scanned, toHash: this.stage.queued, hashed: files, hashedBytes: bytes, skipped: skipped.size, skippedWithoutContent: skipped.withoutContent, skippedFiles: skipped.list(), error }
  }

  /** `work`'s answer, or undefined when the folder was stopped meanwhile (the stop shows as an abort). */
  private async untilStopped<T> (work: Promise<T>): Promise<T | undefined> {
    try {
      return await work
    } catch (err) {
      if (this.signal.aborted) return undefined
      throw err
    }
  }

  private async startOnce (): Promise<void> {
    // The scan thread loads the rows while the watches are set up, and walks once they are up.
    // Owned here whatever the scan does: a watch that cannot be set up at all puts the folder in error.
    const watching = this.startWatching().catch((err: unknown) => { this.fail(err as Error); return false })
    // A scan that ran to its end waited for the watches; one cut short (a missing root) may not have.
    if (!(await this.scanOnce(watching)) || !(await watching)) return
    this.signal.throwIfAborted()
    // A watch that failed while being set up (out of inotify watches) put the folder in error; the scan still indexed it.
    if (this.error !== undefined && this.state === 'verifying') this.state = 'error'
    if (this.state !== 'verifying') return
    this.state = 'watching'
    this.root.settled()
  }

  /** Sets up the watches (directories only); false when stopped meanwhile, the watches then closed. */
  private async startWatching (): Promise<boolean> {
    await this.watcher.start()
    if (!this.signal.aborted) return true
    await this.watcher.close()
    return false
  }

  /** The scan (see {@link scan}); with `after`, the walk waits for it (the watches being set up). */
  private async scanOnce (after?: Promise<unknown>): Promise<boolean> {
    // A missing folder (an unmounted disk) is an error to show, never a reason to mark its files deleted.
    const why = await this.root.pin()
    this.signal.throwIfAborted()
    if (why !== undefined) {
      this.loseRoot(why)
      return false
    }
    this.state = 'scanning'
    try {
      await this.scanner.startup(after)
    } catch (err) {
      this.signal.throwIfAborted()
      // The folder went away under the scan: not a reason to think its files are gone.
      if (await this.root.intact()) throw err
      this.signal.throwIfAborted()
      this.loseRoot('went away during the scan')
      return false
    }
    if (this.state === 'scanning') this.state = 'verifying'
    this.wakeIdle()
    return true
  }

  /** What the root guard found: the folder gone, emptied, or back (scanned and watched anew). */
  private async onRootCheck (state: RootState): Promise<void> {
    switch (state.kind) {
      case 'same':
        if (this.lost) await this.restart()
        else this.root.schedule()
        return
      case 'missing':
        this.loseRoot(state.why)
        return
      case 'emptied':
        this.loseRoot('is now another, empty directory (was a disk unmounted?)', 'mount it again, or put files in it to index it as it is now')
        return
      case 'back':
        await this.restart()
    }
  }

  /** The folder is away: an error in status, its rows kept, its watches closed, looked for again with back-off. */
  private loseRoot (why: string, fix = 'create or mount it, or remove it from the config'): void {
    const message = `folder "${this.name}" at ${this.init.folder.path} ${why}: ${fix}; its indexed files are kept as they were`
    if (this.error !== message) {
      this.error = undefined
      this.fail(new FolderError(message))
    }
    this.state = 'error'
    this.lost = true
    this.watcher.close().catch((err: unknown) => { this.components.logger.warn({ folder: this.name, err }, 'closing the watches failed') })
    this.root.retry()
    this.wakeIdle()
  }

  /** The folder is back (or another one is mounted there): scan it against the rows, then watch it. */
  private async restart (): Promise<void> {
    if (this.restarting !== undefined) return
    this.components.logger.info({ folder: this.name, path: this.init.folder.path }, 'folder is back: scanning it again')
    this.restarting = (async () => {
      await this.watcher.close()
      this.signal.throwIfAborted()
      this.lost = false
      this.error = undefined
      this.state = 'starting'
      await this.startOnce()
    })()
    try {
      await this.restarting
    } catch (err) {
      if (this.signal.aborted) return
      this.error = undefined
      this.fail(err as Error)
      this.lost = true
      this.root.retry()
    } finally {
      this.restarting = undefined
      this.wakeIdle()
    }
  }

  /** A directory that cannot be watched is skipped and retried; anything else puts the folder in error. */
  private watchFailed (err: Error): void {
    const skip = skippedByWatchError(this.init.folder.path, err)
    if (skip !== undefined) this.skipped.skip(skip.path, skip.code, 'dir')
    else this.fail(err)
  }

  private fail (err: Error): void {
    if (this.error !== undefined || this.signal.aborted) return
    this.error = err.message
    this.state = 'error'
    this.components.logger.error({ folder: this.name, err }, err.message)
  }

  private isIdle (): boolean {
    return this.state !== 'scanning' && this.state !== 'starting' && this.stage.idle && !this.newDirs.busy
  }

  private wakeIdle (): void {
    if (!this.isIdle() && !this.signal.aborted) return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    for (const wake of waiters) wake()
  }
}
