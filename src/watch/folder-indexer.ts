import { lstat, opendir, stat } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { join, sep } from 'node:path'
import type { Logger } from 'pino'
import type { CidProfileName } from '../content/index.js'
import type { EntryStore, KnownFile } from '../index/index.js'
import { scanFolder, type ScanResult } from './scan.js'
import type { FolderConfig } from '../config/index.js'
import { FolderError, HashError } from '../errors.js'
import type { ChangeWriter } from './change-writer.js'
import { FolderWatcher, holdsTooLongPath } from './folder-watcher.js'
import type { HashPool, HashResult } from './hash-pool.js'
import { createIgnoreMatcher, type IgnoreMatcher } from './ignore.js'
import { walkFiles } from './walk.js'
import { RootGuard, type RootState } from './root-guard.js'
import { NewDirs } from './new-dirs.js'
import { SkippedFiles, SYMLINK_NOT_FOLLOWED, type SkippedFile } from './skipped-files.js'
import { backoffMs } from '../util/backoff.js'

/**
 * `starting`: the watches are being set up; `scanning`: the startup scan runs; `verifying`: the
 * scan is done and what it found is being hashed (a scan without watches, {@link FolderIndexer.scan},
 * stays there); `watching`: live.
 */
export type FolderState = 'starting' | 'scanning' | 'verifying' | 'watching' | 'error' | 'stopped'

/** A folder's progress, as /status shows it. */
export interface FolderProgress {
  readonly name: string
  readonly path: string
  readonly state: FolderState
  /** Files seen by the startup scan so far. */
  readonly scanned: number
  /** Files waiting for, or in, hashing. */
  readonly toHash: number
  readonly hashed: number
  readonly hashedBytes: number
  /** Files that could not be read (permissions, I/O errors), each logged once and retried. */
  readonly skipped: number
  /** The first of them, with why and since when (bounded: see {@link SkippedFiles}). */
  readonly skippedFiles: readonly SkippedFile[]
  readonly error: string | undefined
}

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
}

const MAX_RETRY_MS = 60_000

/** cidsync's own dirs inside the folder, never indexed. */
function excludedPaths (folder: FolderConfig): string[] {
  return (folder.exclude ?? []).map(e => e.path)
}
/** The reason listed for a name that is not UTF-8: it cannot be a row, and waiting will not fix it. */
const NAME_NOT_UTF8 = 'ERR_NAME_NOT_UTF8'
/** A file still changing after this many looks is listed as skipped (and still looked at). */
const BUSY_LISTED_AFTER = 5

/**
 * Keeps one folder's rows true to the disk: a startup scan that hashes only files whose size or
 * mtime moved, then live events, each path settled before it is looked at, so an editor's
 * write-temp-then-rename ends as one change.
 */
/** The longest wait between tries of a path skipped for want of descriptors (EMFILE, ENFILE). */
const TRANSIENT_RETRY_MAX_MS = 10_000

export class FolderIndexer {
  private readonly ignore: IgnoreMatcher
  private readonly watcher: FolderWatcher
  private state: FolderState = 'starting'
  private error: string | undefined
  private readonly settling = new Map<string, NodeJS.Timeout>()
  private readonly hashing = new Set<string>()
  private readonly again = new Set<string>()
  private readonly retries = new Map<string, number>()
  /** Paths that could not be read, retried until they can (or are gone). */
  readonly skipped: SkippedFiles
  private scanned = 0
  private hashed = 0
  private hashedBytes = 0
  private idleWaiters: Array<() => void> = []
  private readonly newDirs: NewDirs
  private readonly root: RootGuard
  /** The folder's root is away (missing, replaced, unmounted): the error clears when it is back. */
  private lost = false
  private restarting: Promise<void> | undefined
  private readonly stopScan = new AbortController()

  constructor (private readonly components: FolderIndexerComponents, private readonly init: FolderIndexerInit) {
    this.ignore = createIgnoreMatcher(init.folder.ignore, excludedPaths(init.folder))
    this.skipped = new SkippedFiles({ onDue: (rel, kind) => this.retrySkipped(rel, kind), minRetryMs: init.skipRetryMs })
    this.watcher = new FolderWatcher({ root: init.folder.path, ignore: this.ignore, followSymlinks: init.folder.followSymlinks }, {
      onPath: (rel) => this.settle(rel),
      onDirAdded: (rel) => this.newDirs.add(rel),
      onDirRemoved: (rel) => this.removeTree(rel),
      onDirChanged: (rel) => {
        this.rescan(rel, false).catch((err: unknown) => { this.rescanFailed(rel, err) })
      },
      onRootChanged: () => this.root.schedule(50),
      onError: (err) => this.watchFailed(err),
      onSymlink: (rel) => this.skip(rel, SYMLINK_NOT_FOLLOWED)
    })
    this.newDirs = new NewDirs({
      root: init.folder.path, folder: init.folder.name, ignore: this.ignore, followSymlinks: init.folder.followSymlinks, watcher: this.watcher,
      logger: components.logger, signal: this.stopScan.signal,
      onFile: (rel) => this.settle(rel, 0), onBadName: (rel) => this.skip(rel, NAME_NOT_UTF8), onIdle: () => this.wakeIdle(),
      onUnreadable: (rel, code, kind) => this.skip(rel, code, kind),
      onSymlink: (rel) => this.skip(rel, SYMLINK_NOT_FOLLOWED)
    })
    this.root = new RootGuard({ path: init.folder.path, hasRows: () => this.hasRows(), onCheck: async (state) => { await this.onRootCheck(state) } })
  }

  get name (): string {
    return this.init.folder.name
  }

  get config (): FolderConfig {
    return this.init.folder
  }

  /**
   * The startup scan, on a thread of its own: every file whose size or mtime moved is queued for
   * hashing, every row whose file is gone is looked at. Resolves when the scan is done (hashing
   * may still run: see {@link idle}): true, or false when it did not run to its end (stopped, the
   * folder missing). With `after`, the walk waits for it (the watches being set up).
   */
  async scan (after?: Promise<unknown>): Promise<boolean> {
    // A missing folder (an unmounted disk) is an error to show, never a reason to mark its files deleted.
    if (this.state === 'stopped') return false
    const why = await this.root.pin()
    if ((this.state as FolderState) === 'stopped') return false
    if (why !== undefined) {
      this.loseRoot(why)
      return false
    }
    this.state = 'scanning'
    let result
    try {
      result = await this.runScan(undefined, undefined, after)
    } catch (err) {
      // The folder went away under the scan: not a reason to think its files are gone.
      if (await this.root.intact()) throw err
      this.loseRoot('went away during the scan')
      return false
    }
    if (result === undefined) return false
    this.scanned = result.scanned
    for (const rel of result.missing) {
      // Gone while the daemon was down, or ignored by a rule added since.
      if (this.ignore(rel)) this.remove(rel)
      else this.settle(rel, 0)
    }
    if (this.state === 'scanning') this.state = 'verifying'
    this.wakeIdle()
    return true
  }

  /**
   * The drift check's pass over a watched folder: a fresh scan compared with the rows, every
   * difference queued for repair as at start (files hashed, vanished ones looked at and tombstoned).
   * Answers how many differences it found that no event had already queued, or undefined when the
   * folder is not being watched or its root is missing (an unmounted disk is never taken for deletes).
   */
  async checkDrift (): Promise<number | undefined> {
    if (this.state !== 'watching' || !(await this.rootPresent())) return undefined
    // Rows gathered but not committed would look like drift to the scan's own connection.
    this.components.writer.flush()
    const busy = (rel: string): boolean => this.settling.has(rel) || this.hashing.has(rel) || this.skipped.has(rel)
    let found = 0
    const links = new Set<string>()
    const listedLinks = this.listedUnder(SYMLINK_NOT_FOLLOWED, '', true)
    const result = await this.runScan(rel => { if (!busy(rel)) found++ }, rel => links.add(rel))
    if (result === undefined || this.state !== 'watching' || !(await this.rootPresent())) return undefined
    for (const path of listedLinks) if (!links.has(path)) this.skipped.clear(path)
    for (const rel of result.missing) {
      if (busy(rel)) continue
      found++
      if (this.ignore(rel)) this.remove(rel)
      else this.settle(rel, 0)
    }
    return found
  }

  private async rootPresent (): Promise<boolean> {
    return (await stat(this.init.folder.path).catch(() => undefined))?.isDirectory() === true
  }

  /** The scan thread's answer, or undefined when the indexer was stopped meanwhile. */
  private async runScan (seen?: (rel: string) => void, linkSeen?: (rel: string) => void, after?: Promise<unknown>): Promise<ScanResult | undefined> {
    const { folder } = this.init
    const request = {
      root: folder.path, folder: folder.name, ignore: folder.ignore, exclude: excludedPaths(folder), followSymlinks: folder.followSymlinks,
      indexPath: this.components.entries.path, deviceId: this.components.deviceId, profile: this.init.profile
    }
    try {
      return await scanFolder(request, {
        onChanged: (files, scanned) => {
          this.scanned = scanned
          for (const [rel, size] of files) {
            seen?.(rel)
            this.hash(rel, size)
          }
        },
        onUnreadable: (rel, code) => {
          if (code === SYMLINK_NOT_FOLLOWED) linkSeen?.(rel)
          this.skip(rel, code, 'dir')
        }
      }, { signal: this.stopScan.signal, after, room: async () => { await this.components.pool.room() } })
    } catch (err) {
      if (this.stopScan.signal.aborted) return undefined
      throw err
    }
  }

  /**
   * Watches the folder, then scans it (see {@link scan}): a change made once a directory's watch
   * is up is reported by it, one made before is found by the scan, which reads every directory
   * after its watch. So no second pass over the files is needed (chokidar's own, which stat'ed
   * every file again, took longer than the scan and most of the daemon's peak memory). Resolves
   * when the scan is done; hashing what it found goes on (see {@link idle}).
   */
  async start (): Promise<void> {
    if (this.state === 'stopped') return
    const why = await this.root.pin()
    if ((this.state as FolderState) === 'stopped') return
    if (why !== undefined) {
      this.loseRoot(why)
      return
    }
    // The scan thread loads the rows while the watches are set up, and walks once they are up.
    // Owned here whatever the scan does: a watch that cannot be set up at all puts the folder in error.
    const watching = this.startWatching().catch((err: unknown) => { this.fail(err as Error); return false })
    // A scan that ran to its end waited for the watches; one cut short (a missing root) may not have.
    if (!(await this.scan(watching)) || !(await watching)) return
    // A watch that failed while being set up (out of inotify watches) put the folder in error; the scan still indexed it.
    if (this.error !== undefined && (this.state as FolderState) === 'verifying') this.state = 'error'
    if ((this.state as FolderState) !== 'verifying') return
    this.state = 'watching'
    this.root.settled()
  }

  /** Sets up the watches (directories only); false when stopped meanwhile. */
  private async startWatching (): Promise<boolean> {
    if (this.state === 'stopped') return false
    await this.watcher.start()
    // Stopped meanwhile (a folder that came back just as the daemon stops): no watch may outlive it.
    if ((this.state as FolderState) === 'stopped') {
      await this.watcher.close()
      return false
    }
    return true
  }

  /** Resolves when nothing is settling or hashing: the folder's rows match the disk as last seen. */
  async idle (): Promise<void> {
    if (this.isIdle()) return
    await new Promise<void>(resolve => this.idleWaiters.push(resolve))
  }

  async stop (): Promise<void> {
    this.state = 'stopped'
    this.stopScan.abort()
    this.root.stop()
    this.skipped.close()
    for (const timer of this.settling.values()) clearTimeout(timer)
    this.settling.clear()
    await this.watcher.close()
    this.wakeIdle()
  }

  progress (): FolderProgress {
    return {
      name: this.name,
      path: this.init.folder.path,
      state: this.state,
      scanned: this.scanned,
      toHash: this.settling.size + this.hashing.size,
      hashed: this.hashed,
      hashedBytes: this.hashedBytes,
      skipped: this.skipped.size,
      skippedFiles: this.skipped.list(),
      error: this.error
    }
  }

  /**
   * The row as it is about to be: a change gathered and not yet committed wins over the committed
   * row. A directory moved away and back within a batch has tombstones queued for files whose rows
   * still look live; compared with those rows, the files would be taken as unchanged and then lost.
   */
  private knownFile (rel: string): KnownFile | undefined {
    const pending = this.components.writer.pendingFor(this.name, rel)
    if (pending !== undefined) return pending.kind === 'delete' ? undefined : { size: pending.size, mtimeMs: pending.mtimeMs, cidProfile: pending.cidProfile }
    return this.components.entries.knownFile(this.components.deviceId, this.name, rel)
  }

  private matches (known: KnownFile, stats: Stats): boolean {
    return known.size === stats.size && known.mtimeMs === stats.mtimeMs && known.cidProfile === this.init.profile
  }

  private settle (rel: string, delay = this.init.settleMs): void {
    if (this.state === 'stopped' || this.ignore(rel)) return
    clearTimeout(this.settling.get(rel))
    this.settling.set(rel, setTimeout(() => {
      this.settling.delete(rel)
      void this.look(rel).catch((err: unknown) => this.lookFailed(rel, err as Error)).finally(() => this.wakeIdle())
    }, delay))
  }

  /** The index could not be read for this path: counted like a failed write, looked at again later. */
  private lookFailed (rel: string, err: Error): void {
    this.components.writer.readFailed(err)
    const attempt = (this.retries.get(rel) ?? 0) + 1
    this.retries.set(rel, attempt)
    this.settle(rel, backoffMs({ firstMs: this.init.settleMs, maxMs: MAX_RETRY_MS, jitter: 'none' }, attempt + 1))
  }

  /** After a path settles: gone, unchanged, or to be hashed. */
  private async look (rel: string): Promise<void> {
    const stats = await this.statOf(rel)
    if (stats === 'unreadable') return
    if (stats === 'link') {
      // A file replaced by a link not followed: its row goes, and the link is listed.
      if (this.knownFile(rel) !== undefined) this.remove(rel)
      this.skip(rel, SYMLINK_NOT_FOLLOWED)
      return
    }
    if (stats === undefined || !stats.isFile()) {
      // Gone, unless the whole folder is: an unmounted disk's files are not deleted ones.
      if (stats === undefined) {
        if (await this.root.intact()) this.remove(rel)
        else this.root.schedule(0)
      }
      else {
        // A file's name taken by a directory (or a fifo, a socket): its row is no file any more.
        if (this.knownFile(rel) !== undefined) this.remove(rel)
        // A skipped directory touched (chmod'ed back, say): try it now rather than at its next retry.
        if (stats.isDirectory() && this.skipped.has(rel)) this.retrySkipped(rel, 'dir')
        else this.skipped.clear(rel)
      }
      return
    }
    const row = this.knownFile(rel)
    if (row !== undefined && this.matches(row, stats)) {
      this.skipped.clear(rel)
      return
    }
    this.hash(rel, stats.size)
  }

  /**
   * undefined when the path is gone; 'unreadable' (noted as skipped) when it cannot be stat'ed for
   * another reason, such as a directory above it losing its permissions: that is no delete.
   */
  private async statOf (rel: string): Promise<Stats | undefined | 'unreadable' | 'link'> {
    const path = join(this.init.folder.path, rel)
    try {
      const stats = await lstat(path)
      if (!stats.isSymbolicLink()) return stats
      return this.init.folder.followSymlinks ? await stat(path) : 'link'
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO'
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
      this.skip(rel, code)
      return 'unreadable'
    }
  }

  private hash (rel: string, sizeHint: number): void {
    if (this.hashing.has(rel)) {
      this.again.add(rel)
      return
    }
    this.hashing.add(rel)
    this.components.pool.submit(join(this.init.folder.path, rel), this.init.profile, sizeHint, (err, result) => {
      this.hashing.delete(rel)
      if (result !== undefined) this.indexed(rel, result)
      else this.hashFailed(rel, err)
      if (this.again.delete(rel)) this.settle(rel)
      this.wakeIdle()
    })
  }

  private indexed (rel: string, result: HashResult): void {
    this.retries.delete(rel)
    this.skipped.clear(rel)
    this.hashed++
    this.hashedBytes += result.size
    this.components.writer.write({ kind: 'upsert', folder: this.name, path: rel, size: result.size, mtimeMs: result.mtimeMs, cid: result.cid, cidProfile: this.init.profile })
  }

  private hashFailed (rel: string, err: unknown): void {
    if (this.state === 'stopped') return
    const reason = err instanceof HashError ? err.reason : 'EIO'
    if (reason === 'ENOENT' || reason === 'ENOTDIR') {
      this.settle(rel, 0)
    } else if (reason === 'ERR_FILE_CHANGED') {
      // Still being written: look again later, backing off so a growing log is not rehashed nonstop.
      const attempt = (this.retries.get(rel) ?? 0) + 1
      this.retries.set(rel, attempt)
      // Busy for long (a log written nonstop): listed, so it is not silently behind.
      if (attempt >= BUSY_LISTED_AFTER) this.skipped.note(rel, reason, { retry: false })
      this.settle(rel, backoffMs({ firstMs: this.init.settleMs, maxMs: MAX_RETRY_MS, jitter: 'none' }, attempt + 1))
    } else {
      this.skip(rel, reason)
    }
  }

  /** A walk of a directory that failed part way (out of descriptors, say): the directory is listed and walked again later. */
  private rescanFailed (rel: string, err: unknown): void {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return
    this.components.logger.warn({ folder: this.name, path: rel, err }, 'a directory could not be looked at again; retrying')
    this.skip(rel, code ?? 'EIO', 'dir')
  }

  /** Lists a path that cannot be read, to be retried with back-off, and logs it the first time only. */
  private skip (rel: string, reason: string, kind: 'file' | 'dir' = 'file'): void {
    if (this.state === 'stopped') return
    if (reason === NAME_NOT_UTF8) {
      if (this.skipped.note(rel, reason, { kind: 'file', retry: false })) this.components.logger.warn({ folder: this.name, path: rel, reason }, 'file skipped: its name is not valid UTF-8; rename it to index it')
      return
    }
    if (reason === SYMLINK_NOT_FOLLOWED) {
      // Seen again by every walk and watch event: not a retry, so not counted as one.
      if (this.skipped.reasonOf(rel) === reason) return
      // Listed in status like any path left out; a link is a choice of the config, not a fault: info.
      if (this.skipped.note(rel, reason, { kind: 'file', retry: false })) this.components.logger.info({ folder: this.name, path: rel, reason }, 'symbolic link skipped: follow_symlinks is off for this folder')
      return
    }
    // Out of descriptors passes when the flood does: tried again often, not after minutes.
    const transient = reason === 'EMFILE' || reason === 'ENFILE'
    if (!this.skipped.note(rel, reason, { kind, maxRetryMs: transient ? TRANSIENT_RETRY_MAX_MS : undefined })) return
    this.components.logger.warn({ folder: this.name, path: rel, reason, kind }, kind === 'dir' ? 'directory skipped: it could not be read; retrying' : 'file skipped: it could not be read; retrying')
  }

  /** A skipped path is due: a file is looked at again, a directory walked again. */
  private retrySkipped (rel: string, kind: 'file' | 'dir'): void {
    if (this.state === 'stopped') return
    if (this.ignore(rel)) {
      this.skipped.clear(rel)
      return
    }
    if (kind === 'file') {
      this.settle(rel, 0)
      return
    }
    void opendir(join(this.init.folder.path, rel)).then(async dir => {
      await dir.close()
      // Readable, but still holding a path too long to watch: stays skipped, backing off.
      if (holdsTooLongPath(join(this.init.folder.path, rel))) {
        this.skip(rel, 'ENAMETOOLONG', 'dir')
        return
      }
      if (!this.skipped.clear(rel)) return
      this.components.logger.info({ folder: this.name, path: rel }, 'directory readable again: indexing it')
      this.watcher.rewatch(rel)
      await this.rescan(rel, true).catch((err: unknown) => { this.rescanFailed(rel, err) })
    }, (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') this.skipped.clearTree(rel)
      else this.skip(rel, err.code ?? 'EIO', 'dir')
    }).catch((err: unknown) => { this.components.logger.warn({ folder: this.name, path: rel, err }, 'retrying a skipped directory failed') })
  }

  private remove (rel: string): void {
    this.skipped.clear(rel)
    this.components.writer.write({ kind: 'delete', folder: this.name, path: rel })
  }

  private removeTree (relDir: string): void {
    const { entries, deviceId } = this.components
    this.skipped.clearTree(relDir)
    try {
      for (const entry of entries.list({ deviceId, prefix: `${this.name}/${relDir}/` })) this.settle(entry.path, 0)
    } catch (err) {
      // From chokidar's event: never throw there. The drift check finds these rows later.
      this.components.writer.readFailed(err as Error)
    }
  }

  private async rescan (relDir: string, recursive: boolean): Promise<void> {
    if (this.ignore(relDir)) return
    // Names that are not UTF-8 in this directory are listed again: one renamed since leaves the list.
    // So are links not followed: one removed since leaves it too.
    const before = [...this.listedUnder(NAME_NOT_UTF8, relDir, recursive), ...this.listedUnder(SYMLINK_NOT_FOLLOWED, relDir, recursive)]
    const found = new Set<string>()
    const onBadName = (rel: string): void => { found.add(rel); this.skip(rel, NAME_NOT_UTF8) }
    const onSymlink = (rel: string): void => { found.add(rel); this.skip(rel, SYMLINK_NOT_FOLLOWED) }
    const options = { ignore: this.ignore, followSymlinks: this.init.folder.followSymlinks, recursive, onBadName, onSymlink, onUnreadable: (rel: string, code: string, kind: 'file' | 'dir') => this.skip(rel, code, kind) }
    for await (const file of walkFiles(this.init.folder.path, relDir, options)) this.settle(file.relativePath, 0)
    for (const path of before) if (!found.has(path)) this.skipped.clear(path)
  }

  /** The paths listed for `reason` under `relDir` (directly, unless `recursive`), before a walk looks again. */
  private listedUnder (reason: string, relDir: string, recursive: boolean): string[] {
    const prefix = relDir === '' ? '' : `${relDir}/`
    return this.skipped.list(Infinity).filter(f => f.reason === reason && f.path.startsWith(prefix) && (recursive || !f.path.slice(prefix.length).includes('/'))).map(f => f.path)
  }

  private hasRows (): boolean {
    return (this.components.entries.totals(this.components.deviceId).find(t => t.folder === this.name)?.files ?? 0) > 0
  }

  /** What the root guard found: the folder gone, emptied, or back (scanned and watched anew). */
  private async onRootCheck (state: RootState): Promise<void> {
    if (this.state === 'stopped') return
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
    if (this.state === 'stopped') return
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
    if (this.restarting !== undefined || this.state === 'stopped') return
    this.components.logger.info({ folder: this.name, path: this.init.folder.path }, 'folder is back: scanning it again')
    this.restarting = (async () => {
      await this.watcher.close()
      if ((this.state as FolderState) === 'stopped') return
      this.lost = false
      this.error = undefined
      this.state = 'starting'
      await this.start()
    })()
    try {
      await this.restarting
    } catch (err) {
      if ((this.state as FolderState) === 'stopped') return
      this.error = undefined
      this.fail(err as Error)
      this.lost = true
      this.root.retry()
    } finally {
      this.restarting = undefined
      this.wakeIdle()
    }
  }

  /**
   * A path inside the folder that cannot be watched (no permission; a name past the system's
   * length limit) is skipped and retried, not the whole folder put in error.
   */
  private watchFailed (err: Error): void {
    const { code, path } = err as NodeJS.ErrnoException
    const root = this.init.folder.path
    // Out of descriptors, even at the root: the walk it cut short is done again later (the whole
    // folder for the root), never the folder left in error with its new files unseen.
    if ((code === 'EMFILE' || code === 'ENFILE') && (path === undefined || path === root || path.startsWith(`${root}/`))) {
      this.skip(path === undefined || path === root ? '' : path.slice(root.length + 1).split(sep).join('/'), code, 'dir')
      return
    }
    if ((code === 'EACCES' || code === 'EPERM' || code === 'ENAMETOOLONG') && path !== undefined && path.startsWith(`${root}/`)) {
      this.skip(path.slice(root.length + 1).split(sep).join('/'), code, 'dir')
      return
    }
    this.fail(err)
  }

  private fail (err: Error): void {
    if (this.error !== undefined) return
    this.error = err.message
    this.state = 'error'
    this.components.logger.error({ folder: this.name, err }, err.message)
  }

  private isIdle (): boolean {
    return this.state !== 'scanning' && this.state !== 'starting' && this.settling.size === 0 && this.hashing.size === 0 && !this.newDirs.busy
  }

  private wakeIdle (): void {
    if (!this.isIdle() && this.state !== 'stopped') return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    for (const wake of waiters) wake()
  }
}
