import { lstatSync, watch as fsWatch, type FSWatcher as NodeWatcher, type Stats } from 'node:fs'
import { lstat } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type { FSWatcher } from 'chokidar'

type Closer = () => void
type Listener = (path: string) => void
interface Handler { _watchWithNodeFs?: (path: string, listener?: Listener) => Closer | undefined }
interface ChokidarInsides {
  options?: { usePolling?: boolean, persistent?: boolean }
  _nodeFsHandler?: Handler
  _getWatchedDir?: (dir: string) => { add: (name: string) => void }
  _emitRaw?: (event: string, name: string | null, details: { watchedPath: string }) => void
  _handleError?: (err: Error) => unknown
  _closers?: unknown
  _addPathCloser?: (path: string, closer: Closer | undefined) => void
}

/**
 * Makes what chokidar keeps per watched directory smaller. A watch is one `fs.watch` and one
 * closure, not chokidar's shared-watch record: a record, two bound broadcasters, a closer and an
 * event closure, and a process-wide map entry under the resolved path. A path's closers sit in an
 * array of their own size, not one grown to 17 slots. chokidar's own state costs KBs of V8 heap a
 * directory (docs/benchmarks.md, "Figures behind the code's comments").
 *
 * What the daemon gives up: chokidar shares one `fs.watch` between its watchers of the same path
 * and tells a file's own watch of events its directory's watch saw. The daemon watches directories
 * only, one chokidar per folder (libuv shares the inotify watch of one inode anyway). Polling and
 * non-persistent watches are left to chokidar. chokidar's private methods are replaced: answers
 * undefined when they are not there any more (a chokidar change), and chokidar's own stay.
 *
 * Each watch remembers which directory it was set on ({@link identity}). A directory may be
 * removed, or moved away, and another made under its name at once: `rm -rf d && mkdir d`, a
 * build's output, a checkout. That leaves its watch on the old one, which reports nothing more of
 * that name. chokidar finds the name there again, so it neither drops nor adds it. Every change in
 * the new directory would go unseen. The old watch's last event names itself, and the parent's names the
 * child; either, finding another directory under the name, hands it to `onReplaced`.
 */
export function leanWatches (watcher: FSWatcher, onReplaced: (path: string) => void): LeanWatches | undefined {
  const w = watcher as unknown as ChokidarInsides
  const handler = w._nodeFsHandler
  const { _getWatchedDir: watchedDir, _emitRaw: emitRaw, _handleError: handleError } = w
  if (handler === undefined || typeof handler._watchWithNodeFs !== 'function' || typeof watchedDir !== 'function' ||
    typeof emitRaw !== 'function' || typeof handleError !== 'function' || !(w._closers instanceof Map) || typeof w._addPathCloser !== 'function') return undefined
  const closers = w._closers as Map<string, Closer[]>
  // Directory → which directory its watch is on: its inode and birth time (a file system hands a
  // freed inode out again at once; the birth time, where there is one, tells the two apart).
  const inodes = new Map<string, string>()
  const original = handler._watchWithNodeFs
  handler._watchWithNodeFs = function (this: Handler, path: string, listener?: Listener) {
    if (w.options?.usePolling === true || w.options?.persistent !== true) return original.call(this, path, listener)
    watchedDir.call(w, dirname(path)).add(basename(path))
    let nodeWatcher: NodeWatcher
    const name = basename(path)
    try {
      nodeWatcher = fsWatch(path, { persistent: true }, (event: string, changed: string | null) => {
        listener?.(path)
        emitRaw.call(w, event, changed, { watchedPath: path })
        // Linux names the watched directory itself when it is deleted or moved away; its parent's
        // watch names it when it goes and when one comes under its name (either may come first).
        if (changed === name) checkReplaced(path)
        if (changed !== null && changed !== '') {
          const child = join(path, changed)
          if (inodes.has(child)) checkReplaced(child)
        }
      })
    } catch (err) {
      handleError.call(w, err as Error)
      return undefined
    }
    const ino = identity(lstatSync(path, { throwIfNoEntry: false }))
    if (ino !== undefined) inodes.set(path, ino)
    nodeWatcher.on('error', (err: Error) => { handleError.call(w, err) })
    return () => {
      if (inodes.get(path) === ino) inodes.delete(path)
      nodeWatcher.close()
    }
  }
  const checkReplaced = (path: string): void => {
    const watched = inodes.get(path)
    void lstat(path).then(now => {
      if (watched !== undefined && now.isDirectory() && identity(now) !== watched && inodes.get(path) === watched) onReplaced(path)
    }, () => {})
  }
  w._addPathCloser = (path: string, closer: Closer | undefined) => {
    if (closer === undefined) return
    const list = closers.get(path)
    if (list === undefined) closers.set(path, [closer])
    else list.push(closer)
  }
  return { identityOf: (path) => inodes.get(path) }
}

/** Which directory a path names now: its inode and, where the file system keeps one, its birth time. */
export function identity (stats: Stats | undefined): string | undefined {
  return stats === undefined ? undefined : `${stats.ino}:${stats.birthtimeMs}`
}

/** What {@link leanWatches} tells of the watches it set. */
export interface LeanWatches {
  /** The {@link identity} of the directory `path`'s watch was set on; undefined when this chokidar does not watch it (or not through these watches). */
  identityOf: (path: string) => string | undefined
}
