import type { Index } from '../../index/index.js'
import type { ProgressEvent } from '../../util/progress.js'

/** The index a repack records its moves in, and how to let it go. */
export interface RepackClaim {
  readonly index: Index
  release: () => void
}

/**
 * What a repack plans and writes with. `index`: this device's index, read to plan. `claim`: taken
 * only once there is something to move, for the index to record in (held by this process alone
 * while it writes); or why it cannot be had now. Without `claim`, `index` is written.
 */
export interface RepackInit {
  readonly index: Index
  readonly deviceId: string
  readonly hostname: string
  readonly claim?: () => Promise<RepackClaim | { readonly skipped: string }>
  /**
   * Writes this device's content index objects again as few, when they are many, and answers the
   * old ones for the prune to delete (storing's `compactOwnIndex`).
   */
  readonly compactIndex?: (signal?: AbortSignal) => Promise<string[]>
}

/** What a repack did (or, in a dry run or when skipped, would do). */
export interface Repacked {
  /** Old packs whose live blobs were copied into new packs (or would be). */
  readonly packs: number
  readonly blobs: number
  /** Live bytes copied. */
  readonly bytes: number
  /** What the old packs hold that no kept publish needs: freed once a publish names the new packs and a prune runs. */
  readonly freed: number
  /** New packs uploaded: 0 in a dry run or when skipped. */
  readonly made: number
  /** Packs an earlier run repacked, whose old copy waits for a publish to name the new one. */
  readonly waiting: number
  /** What those waiting packs hold unused: the prune after that publish frees it. */
  readonly waitingBytes: number
  /** Planned packs that could not be read (gone, damaged, not the size listed): they stay whole. */
  readonly unread?: number
  /** The old packs were deleted in the same run, by a prune after a publish (the daemon's). */
  readonly oldDeleted?: boolean
  /** Why nothing was moved though some packs would be (another process holds the index). */
  readonly skipped?: string
}

export type RepackProgress = ProgressEvent<'prune:repacked', { readonly packs: number, readonly bytes: number }>

/** A live blob of an old pack: its file, which this device's record places there alone. */
export interface Blob { readonly file: string, readonly offset: number, readonly length: number, readonly pack: string }
/** A live blob copied into a new pack, at `at`. */
export type MovedBlob = Blob & { readonly at: number }
export interface PlannedPack { readonly cid: string, readonly size: number, readonly dead: number, readonly blobs: readonly Blob[] }
export interface RepackPlan { readonly packs: PlannedPack[], readonly waiting: number, readonly waitingBytes: number }
