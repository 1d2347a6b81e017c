import type { PublishStep } from '../state/index.js'
import type { PublishedContent } from '../content-outcome.js'
import type { SyncComponents } from '../sync-components.js'
import type { Clock } from '../../util/clock.js'

// What a publish is given and what it answers, apart from the steps, so the merge it runs
// (merge.ts) and the publish itself share them without importing each other.

export interface PublishComponents extends SyncComponents {
  /** Told each step as the job reaches it, with how many merges it made so far. */
  readonly onStep?: (step: PublishStep, merges: number) => void
  /** What a publish is stamped with; the system clock when absent. */
  readonly clock?: Clock
}

/** What one publish is asked; the config, passphrase and sync store come from the repository. */
export interface PublishInit {
  readonly signal?: AbortSignal
  /** Publish even if it drops many of this device's entries (see `drop-guard.ts`). */
  readonly confirmDrop?: boolean
  /** Put this device's index over a pointer whose snapshot cannot be used (`cidsync pointer repair`). */
  readonly repairPointer?: boolean
  /** Labels for this publish (`cidsync snapshot --keep`): a forget always keeps it. Made even when nothing changed. */
  readonly marks?: readonly string[]
}

/** What a publish did: the CID the pointer holds now and its entry count. */
export interface Published {
  readonly cid: string
  readonly entries: number
  readonly skipped: boolean
  readonly merged: number
  /** The labels the publish carries, when it was asked for some. */
  readonly marks?: readonly string[]
  /**
   * Content records this publish names that a prune at the same time is deleting: dropped, so
   * their files are stored again. A publish after the next storing pass names them anew.
   */
  readonly storedAgain?: number
  /** Through the daemon, with folders that store: the content its pass stored first, and what is not stored. */
  readonly content?: PublishedContent
}
