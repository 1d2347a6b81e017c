import type { SkippedFile } from './skipped-files.js'

/**
 * `starting`: the watches are being set up; `scanning`: the startup scan runs; `verifying`: the
 * scan is done and what it found is being hashed (a scan without watches, `FolderIndexer.scan`,
 * stays there); `watching`: live.
 */
export type FolderState = 'starting' | 'scanning' | 'verifying' | 'watching' | 'error' | 'stopped'

/** A folder's progress, as /status shows it. */
export interface FolderProgress {
  readonly name: string
  readonly path: string
  readonly state: FolderState
  /** Files seen by the startup scan so far. */
  readonly scanned: number
  /** Files waiting for, or in, hashing. */
  readonly toHash: number
  readonly hashed: number
  readonly hashedBytes: number
  /** Files that could not be read (permissions, I/O errors), each logged once and retried. */
  readonly skipped: number
  /** Of those, links not followed and special files (FIFOs, sockets, devices): listed, yet no content of theirs is lost. */
  readonly skippedWithoutContent: number
  /** The first of them, with why and since when (bounded: see `SkippedFiles`). */
  readonly skippedFiles: readonly SkippedFile[]
  readonly error: string | undefined
}
