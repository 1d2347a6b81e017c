import { lstatSync, type Dirent, type Stats } from 'node:fs'
import type { FSWatcher } from 'chokidar'

interface ReaddirpEntry { fullPath: string, dirent?: Dirent, stats?: Stats }
type EntryFilter = (entry: ReaddirpEntry) => boolean
type Readdirp = (this: FSWatcher, root: string, options: { fileFilter?: EntryFilter, directoryFilter?: EntryFilter, [key: string]: unknown }) => unknown

/** Gives the entry the lstat chokidar expects of it; false when it went away meanwhile. */
function withStats (entry: ReaddirpEntry): boolean {
  try {
    entry.stats = lstatSync(entry.fullPath)
    return true
  } catch {
    return false
  }
}

/**
 * Makes chokidar's directory reads list names and stat directories and links alone. chokidar 5
 * reads every directory with readdirp `alwaysStat`, an lstat per file: its first pass over 100,000
 * files took longer than the whole startup scan and held ~300 MB at its peak, and every event in a
 * directory read it so again. The daemon ignores files there (one watch per directory; the scan
 * and the raw events find files), so a plain file is dropped on its directory entry's type, unstat'ed.
 * Entries of unknown type (file systems without d_type) are stat'ed and judged as before.
 *
 * chokidar has no option for this: its private `_readdirp` is wrapped. Answers false when it is
 * not there any more (a chokidar change): reads then stat every file as before, slower, still right.
 */
export function statDirectoriesOnly (watcher: FSWatcher): boolean {
  const target = watcher as unknown as { _readdirp?: Readdirp }
  const original = target._readdirp
  if (typeof original !== 'function') return false
  target._readdirp = function (root, options) {
    const { fileFilter, directoryFilter } = options
    return original.call(this, root, {
      ...options,
      alwaysStat: false,
      fileFilter: (entry: ReaddirpEntry) => entry.dirent?.isFile() !== true && withStats(entry) && (fileFilter?.(entry) ?? true),
      directoryFilter: (entry: ReaddirpEntry) => withStats(entry) && (directoryFilter?.(entry) ?? true)
    })
  }
  return true
}
