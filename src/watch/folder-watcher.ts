import { readdirSync, statSync, type Stats } from 'node:fs'
import { lstat } from 'node:fs/promises'
import { basename, dirname, join, sep } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { watch, type FSWatcher } from 'chokidar'
import { WatchLimitError } from '../errors.js'
import { readDirectoriesOnly } from './chokidar-reads.js'
import { identity, leanWatches, type LeanWatches } from './chokidar-watches.js'
import { chainIds, dirId } from './dir-chain.js'
import type { IgnoreMatcher } from './ignore.js'

/** How often {@link FolderWatcher.watched} looks whether a new directory's watch is up. */
const WATCH_POLL_MS = 10
/** A directory chokidar has not started watching by then is added to it here. */
const WATCH_ADD_AFTER_MS = 1_000
/** Past this, a new directory is walked without waiting any longer. */
const WATCH_WAIT_MS = 5_000

/** The longest path the system takes, its NUL included (PATH_MAX: 4096 on Linux, 1024 on macOS). */
const PATH_MAX = process.platform === 'linux' ? 4_096 : 1_024
/** The longest name a directory holds (NAME_MAX). */
const NAME_MAX = 255

/**
 * Whether a directory holds a name whose path is past {@link PATH_MAX}: chokidar's read of such a
 * directory stops at the first of them (ENAMETOOLONG ends its walk there, not a path skipped) and
 * its first pass would never finish. Looked at only near the limit, so it costs nothing elsewhere.
 */
export function holdsTooLongPath (dir: string): boolean {
  const length = Buffer.byteLength(dir)
  if (length + 1 + NAME_MAX + 1 <= PATH_MAX) return false
  try {
    return readdirSync(dir, { encoding: 'buffer' }).some(name => length + 1 + name.length + 1 > PATH_MAX)
  } catch {
    return false
  }
}

/**
 * A watch error that leaves out one directory, not the folder. It is either out of descriptors,
 * even at the root: the walk it cut short is done again later, the whole folder for the root. Or
 * it is a directory inside that cannot be watched: no permission, or a name past the length limit. Answers the
 * directory to list as skipped and retry (`''` for the root), or undefined for a folder error.
 */
export function skippedByWatchError (root: string, err: Error): { readonly path: string, readonly code: string } | undefined {
  const { code, path } = err as NodeJS.ErrnoException
  const inside = path !== undefined && path.startsWith(`${root}/`)
  const rel = inside ? path.slice(root.length + 1).split(sep).join('/') : ''
  if ((code === 'EMFILE' || code === 'ENFILE') && (path === undefined || path === root || inside)) return { path: rel, code }
  if ((code === 'EACCES' || code === 'EPERM' || code === 'ENAMETOOLONG') && inside) return { path: rel, code }
  return undefined
}

/** What the chokidar adapter reports, every path relative to the folder and `/`-separated. */
export interface FolderEvents {
  /** Something happened at this path: settle, then look. */
  onPath (relativePath: string): void
  /** A folder appeared after the first pass (made, or moved in): its files need a walk. */
  onDirAdded (relativePath: string): void
  /** A folder went away: everything under it is gone. */
  onDirRemoved (relativePath: string): void
  /** A watch event could not name its file: look at the whole folder it came from. */
  onDirChanged (relativePath: string): void
  /** The folder itself may have been moved, removed or unmounted: look at it now. */
  onRootChanged (): void
  onError (error: Error): void
  /** A symbolic link seen and not followed (`followSymlinks` false). */
  onSymlink? (relativePath: string): void
}

export interface FolderWatcherInit {
  readonly root: string
  readonly ignore: IgnoreMatcher
  readonly followSymlinks: boolean
}

/**
 * chokidar over one folder, directories only: one inotify watch per directory, not per file.
 * Per-file watches cost far more memory and start-up time (docs/benchmarks.md, "What moved the
 * numbers"). File events come from the directory watches' raw events. chokidar's reads do not stat
 * files ({@link readDirectoriesOnly}, a bounded number at a time), and each watch is one
 * `fs.watch` ({@link leanWatches}). The startup scan, run once the watches are up, looks at them.
 */
export class FolderWatcher {
  private watcher: FSWatcher | undefined
  private lean: LeanWatches | undefined
  private readonly prefix: string

  constructor (private readonly init: FolderWatcherInit, private readonly events: FolderEvents) {
    this.prefix = init.root.endsWith(sep) ? init.root : init.root + sep
  }

  /** Starts watching; resolves once chokidar's first pass over the folder is done. */
  async start (): Promise<void> {
    const { root, followSymlinks } = this.init
    const watcher = watch(root, {
      ignoreInitial: true,
      followSymlinks,
      atomic: false,
      persistent: true,
      ignored: (path: string, stats?: Stats) => this.ignored(path, stats)
    })
    readDirectoriesOnly(watcher)
    this.lean = leanWatches(watcher, (path) => { this.replaced(path) })
    this.watcher = watcher
    watcher.on('raw', (_event: string, filename: string | null, details: unknown) => {
      const watchedPath = (details as { watchedPath?: string } | undefined)?.watchedPath
      const dir = watchedPath === undefined ? undefined : this.relative(watchedPath)
      if (dir === undefined) return
      if (dir === '' && filename === basename(this.init.root)) this.events.onRootChanged()
      // A name that is not UTF-8 arrives with U+FFFD in it, a path that does not exist: look at the directory instead.
      if (filename === null || filename === '' || filename.includes('\uFFFD')) this.events.onDirChanged(dir)
      else this.events.onPath(dir === '' ? filename : `${dir}/${filename}`)
    })
    watcher.on('addDir', (path: string) => { const rel = this.relative(path); if (rel !== undefined && rel !== '') this.events.onDirAdded(rel) })
    watcher.on('unlinkDir', (path: string) => { const rel = this.relative(path); if (rel !== undefined && rel !== '') this.events.onDirRemoved(rel) })
    watcher.on('error', (err: unknown) => {
      const error = err as NodeJS.ErrnoException
      this.events.onError(error.code === 'ENOSPC' ? new WatchLimitError(root, { cause: error }) : error)
    })
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()))
  }

  /**
   * Resolves once `relDir` has a watch of its own, so that a walk started then misses nothing:
   * what comes after, the watch reports. chokidar emits `addDir` before it reads a new directory
   * and before it watches it, and never adds a directory made between its parent's read and its
   * parent's watch; such a directory is added here after {@link WATCH_ADD_AFTER_MS}. Answers false
   * when the directory is gone or no watch came up in time (the walk goes ahead anyway).
   */
  async watched (relDir: string): Promise<boolean> {
    const path = join(this.init.root, relDir)
    // Left unwatched on purpose (see ignored): no watch is coming.
    if (holdsTooLongPath(path)) return false
    const started = Date.now()
    let added = false
    for (;;) {
      const watcher = this.watcher
      if (watcher === undefined) return false
      // chokidar 5 keeps a path's closers in `_closers` once its watch is set (handler.js, _addToNodeFs):
      // the only sign there is. Should that change, a fixed wait stands in for it.
      const closers = (watcher as unknown as { _closers?: unknown })._closers
      if (!(closers instanceof Map)) { await delay(WATCH_ADD_AFTER_MS); return true }
      if (closers.has(path)) {
        // Watched, but perhaps the directory that was there before under this name (see replaced).
        const watchedOn = this.lean?.identityOf(path)
        const now = watchedOn === undefined ? undefined : identity(await lstat(path).catch(() => undefined))
        if (watchedOn === undefined || now === undefined || now === watchedOn) return true
        this.rewatch(relDir)
        await delay(WATCH_POLL_MS)
        continue
      }
      const waited = Date.now() - started
      if (waited > WATCH_WAIT_MS) return false
      if (!added && waited > WATCH_ADD_AFTER_MS) {
        if (!(await lstat(path).then(s => s.isDirectory() || s.isSymbolicLink(), () => false))) return false
        added = true
        watcher.add(path)
      }
      await delay(WATCH_POLL_MS)
    }
  }

  /**
   * A directory made again under a watched name: its watch was on the one removed, or moved away.
   * It is watched anew, and its rows looked at again, since a directory moved away said nothing of
   * its files. It is walked as a new directory, so the files made in it before its new watch are
   * found too.
   */
  private replaced (path: string): void {
    const rel = this.relative(path)
    if (rel === undefined || this.watcher === undefined) return
    this.rewatch(rel)
    if (rel === '') {
      this.events.onRootChanged()
      return
    }
    this.events.onDirRemoved(rel)
    this.events.onDirAdded(rel)
  }

  /** Watches a directory again whose watch failed (it could not be read then, it can now). */
  rewatch (relativePath: string): void {
    const path = join(this.init.root, relativePath)
    this.watcher?.unwatch(path)
    this.watcher?.add(path)
  }

  async close (): Promise<void> {
    // Let go first: a close still running must not clear a watcher started after it.
    const watcher = this.watcher
    this.watcher = undefined
    await watcher?.close()
  }

  private relative (path: string): string | undefined {
    if (path === this.init.root) return ''
    if (!path.startsWith(this.prefix)) return undefined
    const rel = path.slice(this.prefix.length)
    return sep === '/' ? rel : rel.split(sep).join('/')
  }

  private ignored (path: string, stats?: Stats): boolean {
    const rel = this.relative(path)
    if (rel === undefined || rel === '') return false
    if (this.init.ignore.itself(rel)) return true
    if (stats === undefined) return false
    if (stats.isSymbolicLink()) {
      if (!this.init.followSymlinks) {
        this.events.onSymlink?.(rel)
        return true
      }
      // chokidar resolves followed links itself; the file behind one is looked at by the scan.
      return this.isLoop(path, rel)
    }
    // A file: its directory's watch reports it; the scan and the raw events look at it.
    if (stats.isFile()) return true
    if (!stats.isDirectory()) return true
    if (holdsTooLongPath(path)) {
      // Left unwatched and reported, to be skipped (and retried) like any path that cannot be read.
      this.events.onError(Object.assign(new Error(`ENAMETOOLONG: ${path} holds a path longer than the system allows (${PATH_MAX - 1} bytes)`), { code: 'ENAMETOOLONG', path }))
      return true
    }
    return false
  }

  /** A followed link to a directory above it: chokidar would follow it round and round. */
  private isLoop (path: string, rel: string): boolean {
    let target: Stats
    try {
      target = statSync(path)
    } catch {
      return false
    }
    if (!target.isDirectory()) return false
    const parent = dirname(rel)
    return chainIds(this.init.root, parent === '.' ? '' : parent).includes(dirId(target))
  }
}
