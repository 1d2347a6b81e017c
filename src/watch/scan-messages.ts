import type { StatTuple } from '../content/index.js'
import type { EntryKind } from '../index/index.js'

/** What the scan thread is asked to do. */
export interface ScanRequest {
  readonly root: string
  readonly folder: string
  readonly ignore: readonly string[]
  /** Exact paths never entered (cidsync's own dirs inside the folder). */
  readonly exclude: readonly string[]
  readonly followSymlinks: boolean
  /** The index to compare against (read-only); absent or empty means every file is new. */
  readonly indexPath: string
  readonly deviceId: string
  readonly profile: string
  /**
   * When present, the walk waits until its first Int32 is set (the folder's watches are up): the
   * rows load meanwhile, so the watches cost the time to current almost nothing.
   */
  readonly gate?: SharedArrayBuffer
  /**
   * Its first Int32 is the batches of changed files the scan may still send; it waits while none
   * are left, and the main thread gives one back for each batch it has room for (backpressure: a
   * cold index of a million files does not queue a million paths in memory).
   */
  readonly credit: SharedArrayBuffer
  /** Entries listed past which the walk stops and answers `over-bound` (a walk on the caller's own thread). */
  readonly maxEntries?: number
}

/**
 * An entry whose row changes without hashing: a symlink, a directory, or a file whose mode, owner
 * or links moved while its bytes did not (its CID null here: the main thread keeps its row's). A
 * directory's path ends with `/`.
 */
export type Described = readonly [path: string, cid: string | null, size: number, mtimeMs: number, stat: StatTuple, kind: EntryKind, target: string | null]

/** What it answers, in order: batches of files to hash and entries described, then one `done` (or `over-bound`). */
export type ScanMessage =
  | { readonly type: 'changed', readonly files: ReadonlyArray<readonly [path: string, size: number]>, readonly described: readonly Described[], readonly scanned: number }
  | { readonly type: 'special', readonly path: string, readonly what: string }
  | { readonly type: 'unreadable', readonly path: string, readonly code: string }
  | { readonly type: 'done', readonly scanned: number, readonly missing: readonly string[] }
  | { readonly type: 'failed', readonly message: string }
  /** The folder holds more entries than `maxEntries`: nothing it found counts, it is walked on a thread. */
  | { readonly type: 'over-bound' }
