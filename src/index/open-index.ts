/** Opening the index: one SQLite file in the state dir, its stores, and the operations on the whole file. */
import { join } from 'node:path'
import type { Database } from 'better-sqlite3'
import { openDatabase } from './open.js'
import { EntryStore } from './entries.js'
import { RemoteStore } from './remote.js'
import { SegmentStore } from './segments.js'
import { ContentMoves } from './content-moves.js'
import { ContentRecordStore } from './content-records.js'
import { IndexSync, type MergeResult } from './sync-sql.js'
import { STATE_NAMES } from '../config/state-layout.js'

export const INDEX_FILE = STATE_NAMES.index

/** The index file inside a state dir. */
export function indexPath (stateDir: string): string {
  return join(stateDir, INDEX_FILE)
}

export interface Index {
  readonly path: string
  readonly entries: EntryStore
  /** The account's side: uploads, IPNS names, deals. */
  readonly remote: RemoteStore
  /** Segments of `cidsync-sqlite/2`: cut, check, apply, and the recorded segment lists. */
  readonly segments: SegmentStore
  /** Where stored files' content lies (docs/content-format.md). */
  readonly content: ContentRecordStore
  /** A repack's reads of this device's records and its moves of them to new packs. */
  readonly contentMoves: ContentMoves
  /**
   * The raw connection. Nothing outside this room uses it (sync and snapshot go through the
   * methods below); tests keep it for fault injection (`max_page_count`, rows deleted behind the
   * watcher's back), which needs the daemon's own connection.
   */
  readonly db: Database
  /** A consistent copy of the whole index at one instant (`VACUUM INTO`) into an empty or absent file. */
  copyTo (path: string): void
  /**
   * Merges another index file into this one: for every device but `selfDeviceId`, the side with
   * the higher sequence keeps its rows whole. One transaction.
   */
  mergeFrom (otherPath: string, selfDeviceId: string): MergeResult
  /** The devices and their sequence numbers, as a string: equal markers, nothing new to publish. */
  changeMarker (): string
  /**
   * Switches a finished `scratch` build to WAL, as every index is kept, so a reader beside the
   * next daemon never meets the switch. Done on this connection with its syncs still off, not by
   * opening the file again, which costs four fsyncs and a journal. The caller fsyncs the whole
   * file before installing it.
   */
  finishScratch (): void
  close (): void
}

export interface OpenIndexInit {
  readonly readonly?: boolean
  /** `PRAGMA quick_check` first (default: for writers); a damaged file throws `IndexDamagedError`. */
  readonly check?: boolean
  /** SQLite's page cache, in KiB (default: the build's 16 MiB); long-lived connections take `LEAN_CACHE_KIB`. */
  readonly cacheKiB?: number
  /**
   * A new index built aside (a restore's), which the caller fsyncs and renames into place: its
   * journal in memory and no syncs while it is built, then `finishScratch`. Never for the
   * installed index.
   */
  readonly scratch?: boolean
}

/**
 * Opens (and if writable, creates 0600, quick-checks and migrates) the index at `path`. A file
 * that is not a database or fails the check throws `IndexDamagedError` (exit 4).
 */
export function openIndex (path: string, init: OpenIndexInit = {}): Index {
  const readonly = init.readonly === true
  const db = openDatabase(path, { readonly, check: init.check, cacheKiB: init.cacheKiB, scratch: init.scratch })
  const entries = new EntryStore(db, readonly)
  const remote = new RemoteStore(db)
  const segments = new SegmentStore(db)
  const content = new ContentRecordStore(db)
  const sync = new IndexSync(db)
  return {
    path,
    db,
    entries,
    remote,
    segments,
    content,
    contentMoves: new ContentMoves(db),
    copyTo: (to) => { sync.copyTo(to) },
    mergeFrom: (otherPath, selfDeviceId) => sync.mergeFrom(otherPath, selfDeviceId),
    changeMarker: () => sync.changeMarker(),
    finishScratch: () => { db.pragma('journal_mode = WAL') },
    close: () => {
      if (!db.open) return
      // A scratch build has nothing in a WAL to fold in (and SQLite refuses the checkpoint just after `finishScratch`).
      if (!readonly && init.scratch !== true) db.pragma('wal_checkpoint(TRUNCATE)')
      db.close()
    }
  }
}
