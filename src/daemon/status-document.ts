import type { ContentStatus, HistoryRow, MirrorStatus, RestorableStatus, RetentionStatus } from '../sync/index.js'
import type { DriftStatus, SkippedFile, WatcherState } from '../watch/index.js'
import type { PublishStatus, ReconcileStatus } from '../sync/index.js'
import type { RenewalState } from '../connect/index.js'

/** Green: all is done; amber: on its way, or not checked yet; red: `status --check` fails for it. */
export type GlanceLevel = 'green' | 'amber' | 'red'

/** The status in one sentence: every file protected? restorable, as of when? mirrors caught up? */
export interface Glance {
  readonly level: GlanceLevel
  readonly sentence: string
  /** The one thing to do, when not green (`nothing: ...` when it sorts itself out). */
  readonly todo: string | null
}

/** A folder as /status shows it. */
export interface FolderStatus {
  readonly name: string
  readonly path: string
  readonly state: string
  readonly files: number
  readonly bytes: number
  readonly scan: { readonly scanned: number, readonly toHash: number, readonly hashed: number, readonly hashedBytes: number }
  readonly skipped: number
  /** Of those, links not followed and special files: listed, yet no content of theirs goes unprotected. */
  readonly skippedWithoutContent: number
  /** The first skipped paths (bounded), each with why, since when, how often it was retried and what to do. */
  readonly skippedFiles: readonly SkippedFile[]
  readonly error: string | null
  /** Not errors, but worth knowing: cidsync's own dirs that lie inside the folder and are left out. */
  readonly notes: readonly string[]
}

/** Something wrong the daemon found with its own files at start, and what it did about it. */
export interface StateRecovery { readonly at: string, readonly file: string, readonly problem: string, readonly action: string }

/** `detail`: the error's own message, which says what to do. */
export interface RecentError {
  /** When it last happened. */
  readonly at: string
  readonly message: string
  readonly code: string | null
  /** The last time's detail. */
  readonly detail: string | null
  /** How many times it happened in a row of repeats folded into this one (1 when once; absent from older daemons). */
  readonly count?: number
  /** When the first of those repeats happened (absent from older daemons). */
  readonly firstAt?: string
}

/** An error that no longer holds (what it was about worked again since), and when that was seen. */
export interface ResolvedError extends RecentError { readonly resolvedAt: string }

/**
 * The JSON document `GET /status` answers. Fields are added over time, never renamed: tooling
 * reads it.
 */
export interface StatusDocument {
  readonly version: string
  readonly pid: number
  readonly startedAt: string
  readonly uptimeSeconds: number
  readonly device: { readonly id: string, readonly hostname: string }
  readonly namespace: string
  readonly network: string
  readonly stateDir: string
  readonly cidProfile: string
  /**
   * The whole in one sentence (the dashboard's top line): every file protected (stored and
   * published)? restorable, as of which drill? mirrors caught up? `level` green, amber or red
   * (red: `status --check` fails), and the one thing to do when not green.
   */
  readonly glance?: Glance
  /**
   * Which service the daemon talks to: mode, the embedded service's URL or the remote base (null
   * until reached, after the index is current), and why it could not be reached.
   */
  readonly service: { readonly mode: string, readonly endpoint: string | null, readonly error: string | null }
  readonly watcher: {
    readonly state: WatcherState
    /** When the index last caught up with the disk after start (null while still scanning). */
    readonly currentAt: string | null
    /** Files being hashed now: their bytes and how many are read (a large file's progress). */
    readonly hashing: { readonly files: number, readonly bytes: number, readonly bytesRead: number }
  }
  /** Snapshots published: the last one, one pending after changes, the last error (null until the service is reached). */
  readonly publish: PublishStatus | null
  /**
   * The credentials: whether there is an API key, when the session token expires (warned
   * TOKEN_WARNING_DAYS ahead), and how its renewal stands (a remote service's; null otherwise).
   * `problem`: what `status --check` fails on (expired, or expiring soon with nothing renewing it).
   */
  readonly auth: {
    readonly apiKey: 'present' | 'missing'
    readonly sessionToken: {
      readonly present: boolean
      readonly expiresAt: string | null
      readonly warning: string | null
      readonly problem?: string | null
      readonly renewal?: RenewalState | null
    }
  }
  /** The account mirrored: uploads, gone ones, deals pending and overdue (null until the service is reached). */
  readonly reconcile: ReconcileStatus | null
  /**
   * This device's live files by where they stand on the account's side (as `cidsync ls` shows
   * each), counted after each reconciliation (null before the first).
   */
  readonly account: { readonly localOnly: number, readonly stored: number, readonly sentForDeal: number, readonly countedAt: string } | null
  /** Files' content stored (folders with `store = true`): protected, pending, failed, rates (null until the service is reached). */
  readonly content: ContentStatus | null
  /** The last restore drill (`[verify] schedule`, `POST /verify`, `cidsync verify`): whether the pointer restores (null before the first). */
  readonly restorable: RestorableStatus | null
  /** Forget and prune on `[retention] schedule`: the last run's counts and error (null before the service is reached). */
  readonly retention?: RetentionStatus | null
  /**
   * Each `[[mirrors]]` table: objects not copied yet and since when, the last publish moved there,
   * the last error with what to do, its pointer if it went back or ahead, its last restore drill
   * (docs/mirrors.md). Empty with no mirrors or before the service is reached.
   */
  readonly mirrors?: readonly MirrorStatus[]
  /** The publishes from the pointer back, newest first, as far as the manifests already read go (at most 100). */
  readonly history: readonly HistoryRow[]
  readonly folders: readonly FolderStatus[]
  readonly index: {
    readonly path: string
    readonly files: number
    readonly bytes: number
    readonly rowsWritten: number
    readonly writeErrors: number
    /** `retrying`: writes fail (disk full...) and are tried again, nothing dropped; `stopped`: given up, the daemon exits. */
    readonly writeState: 'ok' | 'retrying' | 'stopped'
    /** Changes gathered and not yet committed. */
    readonly pendingWrites: number
    /** The last failed write and what to do (kept after recovery; `writeState` says whether it still fails). */
    readonly lastError: { readonly at: string, readonly code: string, readonly message: string, readonly retryAt: string | null } | null
  }
  /** The drift check (a fresh walk compared with the index); null before the watcher exists. */
  readonly drift: DriftStatus | null
  readonly filesSkipped: number
  readonly memory: { readonly rssBytes: number, readonly heapUsedBytes: number }
  /** Errors that still hold, oldest first: one leaves once what it was about works again (a later publish went through). */
  readonly lastErrors: readonly RecentError[]
  /** The last errors that were resolved, oldest first, each with when. */
  readonly resolvedErrors: readonly ResolvedError[]
  /**
   * `GET /events`: the last event's id, the streams open, the consumers dropped for not reading,
   * and the most bytes one stream ever had waiting (kept under the bound by dropping).
   */
  readonly events: { readonly lastId: number, readonly streams: number, readonly dropped: number, readonly peakBufferedBytes: number }
  /**
   * The daemon's own files: what it found wrong at start and did (a damaged index or sync.sqlite
   * moved aside, a lost index rebuilt), temp files of killed jobs removed at start, and an error
   * reading sync.sqlite now (publish is null meanwhile).
   */
  readonly stateFiles: {
    readonly recovered: readonly StateRecovery[]
    readonly leftoversRemoved: { readonly files: number, readonly bytes: number }
    readonly syncStateError: string | null
  }
  /**
   * The last reload (SIGHUP): when, and whether the config on disk was refused (it no longer
   * validates: the daemon runs on the one it had, and says so until a reload succeeds). Null
   * before the first reload.
   */
  readonly reload?: ReloadStatus | null
}

/** See {@link StatusDocument.reload}. */
export interface ReloadStatus {
  readonly at: string
  readonly ok: boolean
  /** Why the config was refused (null when the reload went through). */
  readonly refused: string | null
  readonly config: string | null
}
