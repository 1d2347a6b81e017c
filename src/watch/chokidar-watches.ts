import { watch as fsWatch, type FSWatcher as NodeWatcher } from 'node:fs'
import { basename, dirname } from 'node:path'
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
 * Makes what chokidar keeps per watched directory smaller: a watch is one `fs.watch` and one
 * closure, not chokidar's shared-watch record (a record, two bound broadcasters, a closer and an
 * event closure, a process-wide map entry under the resolved path), and a path's closers sit in an
 * array of their own size, not one grown to 17 slots. Over 30,000 directories chokidar's state
 * was ~2.9 KB of V8 heap a directory (docs/benchmarks.md).
 *
 * What the daemon gives up: chokidar shares one `fs.watch` between its watchers of the same path
 * and tells a file's own watch of events its directory's watch saw. The daemon watches directories
 * only, one chokidar per folder (libuv shares the inotify watch of one inode anyway). Polling and
 * non-persistent watches are left to chokidar. chokidar's private methods are replaced: answers false
 * when they are not there any more (a chokidar change), and chokidar's own stay.
 */
export function leanWatches (watcher: FSWatcher): boolean {
  const w = watcher as unknown as ChokidarInsides
  const handler = w._nodeFsHandler
  const { _getWatchedDir: watchedDir, _emitRaw: emitRaw, _handleError: handleError } = w
  if (handler === undefined || typeof handler._watchWithNodeFs !== 'function' || typeof watchedDir !== 'function' ||
    typeof emitRaw !== 'function' || typeof handleError !== 'function' || !(w._closers instanceof Map) || typeof w._addPathCloser !== 'function') return false
  const closers = w._closers as Map<string, Closer[]>
  const original = handler._watchWithNodeFs
  handler._watchWithNodeFs = function (this: Handler, path: string, listener?: Listener) {
    if (w.options?.usePolling === true || w.options?.persistent !== true) return original.call(this, path, listener)
    watchedDir.call(w, dirname(path)).add(basename(path))
    let nodeWatcher: NodeWatcher
    try {
      nodeWatcher = fsWatch(path, { persistent: true }, (event: string, name: string | null) => {
        listener?.(path)
        emitRaw.call(w, event, name, { watchedPath: path })
      })
    } catch (err) {
      handleError.call(w, err as Error)
      return undefined
    }
    nodeWatcher.on('error', (err: Error) => { handleError.call(w, err) })
    return () => { nodeWatcher.close() }
  }
  w._addPathCloser = (path: string, closer: Closer | undefined) => {
    if (closer === undefined) return
    const list = closers.get(path)
    if (list === undefined) closers.set(path, [closer])
    else list.push(closer)
  }
  return true
}
