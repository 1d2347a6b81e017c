import type { IndexWriteError, IndexWriteFatalError } from '../errors.js'

/**
 * What the watch room tells its owner as it works, on one channel (`onProgress`), each event
 * typed by its `type` as helia's progress events are: the owner switches on it, and a new kind
 * of event is a new member here, not another callback. A plain callback, so watch/ never
 * imports its owner.
 */
export type WatchEvent =
  /** A commit changed `rows` rows of the index: the change note a publish is scheduled from. */
  | { readonly type: 'index.committed', readonly rows: number }
  /** A commit failed; the batch (`pending` changes) is kept and written again after a back-off. */
  | { readonly type: 'index.write-failed', readonly error: IndexWriteError, readonly pending: number }
  /** The index cannot be written any more: the owner stops the process (nothing is lost, the next scan finds it). */
  | { readonly type: 'index.fatal', readonly error: IndexWriteFatalError }

export type WatchEventListener = (event: WatchEvent) => void
