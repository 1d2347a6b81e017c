/**
 * Watching folders into the index: chokidar over directories, a startup scan that hashes only
 * what changed, a pool of hashing threads, batched writes.
 */
import type { WatcherComponents, WatcherInit } from './watcher.js'
import { Watcher } from './watcher.js'

export { Watcher } from './watcher.js'
export type { WatcherState, WatcherStatus, WatcherComponents, WatcherInit } from './watcher.js'
export { WATCHER_STATES } from './watcher.js'
export type { FolderProgress, FolderState } from './folder-indexer.js'
export type { SkippedFile } from './skipped-files.js'
export type { DriftResult, DriftStatus } from './drift-check.js'
export type { WriterState } from './change-writer.js'
export type { WatchEvent, WatchEventListener } from './watch-event.js'
export { COMMAND_INLINE_HASH_BYTES, HashPool } from './hash-pool.js'
export type { HashPoolInit, HashResult } from './hash-pool.js'
export { createIgnoreMatcher } from './ignore.js'
export type { IgnoreMatcher } from './ignore.js'

export function createWatcher (components: WatcherComponents, init: WatcherInit): Watcher {
  return new Watcher(components, init)
}
