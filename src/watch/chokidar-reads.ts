import { type Dirent, type Stats } from 'node:fs'
import { lstat, opendir, realpath } from 'node:fs/promises'
import { join, resolve, sep } from 'node:path'
import { Readable } from 'node:stream'
import type { FSWatcher } from 'chokidar'
import { handOver, listed, readSlot, releaseRead } from './read-gates.js'

/** What chokidar's `_handleRead` takes of a readdirp entry (depth 0: `path` is the name). */
interface ReadEntry { path: string, fullPath: string, basename: string, stats: Stats }
type EntryFilter = (entry: ReadEntry) => boolean
interface ReadOptions { fileFilter?: EntryFilter, directoryFilter?: EntryFilter }
type Readdirp = (this: FSWatcher, root: string, options: ReadOptions) => Readable | undefined
interface ChokidarInsides { _readdirp?: Readdirp, closed?: boolean, _streams?: unknown, _watched?: unknown }
/** Whether chokidar already tracks this name in this directory (a read again after an event). */
type Known = (dir: string, name: string) => boolean

/**
 * Entries `fs.opendir` hands over at a time: a read keeps no more of them alive, about 1 MB at most
 * for all reads at once. Each batch is a trip through libuv's thread pool, and each trip is slow on
 * a loaded machine. node's default of 32 makes a large directory many trips (docs/benchmarks.md,
 * "Memory beside syncthing").
 */
const DIR_BUFFER = 1_024

/** readdirp's: these end a read with a warning (chokidar ignores it), others are errors. */
const NORMAL_FLOW = new Set(['ENOENT', 'EPERM', 'EACCES', 'ELOOP'])

/**
 * One directory's read for chokidar: its subdirectories and links, each lstat'ed and passed through
 * chokidar's filters, as readdirp would hand them. Plain files and other non-directories are
 * dropped on their directory entry's type, never made into an entry. The daemon ignores them there:
 * it holds one watch per directory, and the scan and the raw events find files. A name of unknown type
 * (a file system without d_type) is lstat'ed and judged on that.
 */
class DirectoryRead extends Readable {
  constructor (private readonly root: string, private readonly filters: ReadOptions, private readonly known: Known) {
    super({ objectMode: true, highWaterMark: 16 })
  }

  private started = false

  override _read (): void {
    if (this.started) return
    this.started = true
    this.list().then(() => { if (!this.destroyed) this.push(null) }, (err: NodeJS.ErrnoException) => {
      if (this.destroyed) return
      if (NORMAL_FLOW.has(err.code ?? '')) {
        this.emit('warn', err)
        this.push(null)
      } else {
        this.destroy(err)
      }
    })
  }

  private async list (): Promise<void> {
    const found: ReadEntry[] = []
    await readSlot()
    try {
      if (this.destroyed) return
      const dir = await opendir(this.root, { bufferSize: DIR_BUFFER })
      for await (const dirent of dir) {
        if (this.destroyed) break
        if (dirent.isFile()) continue
        const entry = await this.entryFor(dirent)
        if (entry !== undefined) found.push(entry)
      }
    } finally {
      releaseRead()
      listed(this.root)
    }
    // Handed over as chokidar has room for them: each starts chokidar's work on a directory.
    for (const entry of found) {
      if (this.destroyed) return
      // One chokidar knows already it does nothing with (every event in a directory reads it again).
      if (entry.stats.isDirectory() && !this.known(this.root, entry.basename)) await handOver(entry.fullPath)
      if (!this.destroyed) this.push(entry)
    }
  }

  private async entryFor (dirent: Dirent): Promise<ReadEntry | undefined> {
    const known = dirent.isDirectory() || dirent.isSymbolicLink()
    // Sockets, fifos, devices: never watched, never indexed.
    if (!known && !isUnknown(dirent)) return undefined
    const name = dirent.name
    const fullPath = join(this.root, name)
    let stats: Stats
    try {
      stats = await lstat(fullPath)
    } catch {
      // Gone meanwhile (readdirp warned, chokidar ignores the warning).
      return undefined
    }
    const entry: ReadEntry = { path: name, fullPath, basename: name, stats }
    let kind: 'dir' | 'file' | undefined
    if (stats.isDirectory()) kind = 'dir'
    else if (stats.isSymbolicLink()) kind = await linkKind(fullPath)
    if (kind === 'dir') return (this.filters.directoryFilter?.(entry) ?? true) ? entry : undefined
    if (kind === 'file' && stats.isSymbolicLink()) return (this.filters.fileFilter?.(entry) ?? true) ? entry : undefined
    return undefined
  }

  override _destroy (err: Error | null, callback: (error?: Error | null) => void): void {
    callback(err)
  }
}

function isUnknown (dirent: Dirent): boolean {
  return !dirent.isFile() && !dirent.isDirectory() && !dirent.isSymbolicLink() && !dirent.isFIFO() &&
    !dirent.isSocket() && !dirent.isCharacterDevice() && !dirent.isBlockDevice()
}

/** What readdirp makes of a link: the kind of what it points to; none when that is gone or a parent of it. */
async function linkKind (fullPath: string): Promise<'dir' | 'file' | undefined> {
  try {
    const target = await realpath(fullPath)
    const stats = await lstat(target)
    if (stats.isFile()) return 'file'
    if (!stats.isDirectory()) return undefined
    if (fullPath.startsWith(target) && fullPath[target.length] === sep) return undefined
    return 'dir'
  } catch {
    return undefined
  }
}

/**
 * Replaces chokidar's directory reads with {@link DirectoryRead}s: directories and links alone, a
 * few at a time, handing chokidar a bounded number of directories to work on (read-gates.ts). chokidar 5 reads with readdirp `alwaysStat` (an lstat and a
 * `Stats` a file), and even without it readdirp lists a whole directory and makes an entry object
 * per file. Its first pass reads every directory at once, and all those objects are alive
 * together: they set the daemon's peak memory at a restart. Every event in a directory reads it
 * again.
 *
 * chokidar has no option for this: its private `_readdirp` is replaced (chokidar's own keeps its
 * streams in `_streams`, destroyed at close; so are these). Answers false when it is not there any
 * more (a chokidar change): reads then stat every file, slower, still right.
 */
export function readDirectoriesOnly (watcher: FSWatcher): boolean {
  const target = watcher as unknown as ChokidarInsides
  if (typeof target._readdirp !== 'function') return false
  target._readdirp = function (this: FSWatcher, root: string, options: ReadOptions) {
    const self = this as unknown as ChokidarInsides
    if (self.closed === true) return undefined
    const watched = self._watched
    const known: Known = (dir, name) => watched instanceof Map && (watched.get(resolve(dir)) as { has?: (name: string) => unknown } | undefined)?.has?.(name) === true
    const stream = new DirectoryRead(root, options, known)
    const streams = self._streams
    if (streams instanceof Set) {
      streams.add(stream)
      stream.once('close', () => streams.delete(stream))
      stream.once('end', () => streams.delete(stream))
    }
    return stream
  }
  return true
}
