import type { Stats } from 'node:fs'
import { join, sep } from 'node:path'
import { watch, type FSWatcher } from 'chokidar'
import { WatchLimitError } from '../errors.js'
import type { IgnoreMatcher } from './ignore.js'

/** What the chokidar adapter reports, every path relative to the folder and `/`-separated. */
export interface FolderEvents {
  /** A regular file seen while chokidar walks a folder: the scan's input. */
  onFile (relativePath: string, stats: Stats | undefined): void
  /** Something happened at this path: settle, then look. */
  onPath (relativePath: string): void
  /** A folder appeared after the first pass (made, or moved in): its files need a walk. */
  onDirAdded (relativePath: string): void
  /** A folder went away: everything under it is gone. */
  onDirRemoved (relativePath: string): void
  /** A watch event could not name its file: look at the whole folder it came from. */
  onDirChanged (relativePath: string): void
  onError (error: Error): void
}

export interface FolderWatcherInit {
  readonly root: string
  readonly ignore: IgnoreMatcher
  readonly followSymlinks: boolean
}

/**
 * chokidar over one folder, directories only: one inotify watch per directory, not per file (at
 * 100,000 files chokidar's per-file watches cost 850 MB and 11 s; see docs/benchmarks.md). File
 * events come from the directory watches' raw events; the files chokidar stats while it walks
 * are handed to the scan through its `ignored` callback, so the tree is walked once.
 */
export class FolderWatcher {
  private watcher: FSWatcher | undefined
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
    this.watcher = watcher
    watcher.on('raw', (_event: string, filename: string | null, details: unknown) => {
      const watchedPath = (details as { watchedPath?: string } | undefined)?.watchedPath
      const dir = watchedPath === undefined ? undefined : this.relative(watchedPath)
      if (dir === undefined) return
      if (filename === null || filename === '') this.events.onDirChanged(dir)
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

  /** Watches a directory again whose watch failed (it could not be read then, it can now). */
  rewatch (relativePath: string): void {
    const path = join(this.init.root, relativePath)
    this.watcher?.unwatch(path)
    this.watcher?.add(path)
  }

  async close (): Promise<void> {
    await this.watcher?.close()
    this.watcher = undefined
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
      if (!this.init.followSymlinks) return true
      // chokidar resolves followed links itself; the file behind one is stat'ed by the scan.
      this.events.onFile(rel, undefined)
      return false
    }
    if (stats.isFile()) {
      this.events.onFile(rel, stats)
      return true
    }
    return !stats.isDirectory()
  }
}
