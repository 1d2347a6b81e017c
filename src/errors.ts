/**
 * Every failure cidsync reports is one of these classes: a stable `code` for tooling, a message
 * that says what failed, on what, and what to do, and the CLI exit code it maps to.
 */

import { formatBytes } from './util/format-bytes.js'

/** CLI exit codes (DESIGN.md, "CLI"). */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  notFound: 3,
  integrity: 4,
  /** Ctrl-C (SIGINT) stopped the command, as a shell counts 128 + 2. */
  interrupted: 130,
  /** SIGTERM stopped the command (128 + 15). */
  terminated: 143
} as const

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

export class CidsyncError extends Error {
  readonly code: string = 'ERR_CIDSYNC'
  readonly exitCode: ExitCodeValue = ExitCode.failure

  constructor (message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = new.target.name
  }
}

/** A config file, environment variable or flag holds a value that is not allowed. */
export class ConfigError extends CidsyncError {
  override readonly code = 'ERR_CONFIG'
  override readonly exitCode = ExitCode.usage
}

/** The command line itself is wrong: an unknown profile, a missing argument. */
export class UsageError extends CidsyncError {
  override readonly code = 'ERR_USAGE'
  override readonly exitCode = ExitCode.usage
}

/** The process may open too few files at once (`ulimit -n`) for a command to finish: raise the limit. */
export class OpenFilesLimitError extends CidsyncError {
  override readonly code = 'ERR_OPEN_FILES_LIMIT'
  override readonly exitCode = ExitCode.usage
}

/** The state dir belongs to another user (the system service's): use it as that user. */
export class StateDirOwnerError extends CidsyncError {
  override readonly code = 'ERR_STATE_DIR_OWNER'
  override readonly exitCode = ExitCode.usage
}

/**
 * The embedded service's dir holds no account, or another one than this state dir used: a folder
 * not mounted, moved or replaced. Nothing was started there, so no new account was made in it.
 */
export class EmbeddedAccountChangedError extends CidsyncError {
  override readonly code = 'ERR_EMBEDDED_ACCOUNT_CHANGED'
  override readonly exitCode = ExitCode.usage
}

/** A device named on the command line is not in the index. */
export class DeviceNotFoundError extends CidsyncError {
  override readonly code = 'ERR_DEVICE_NOT_FOUND'
  override readonly exitCode = ExitCode.notFound
}

/** `ls PREFIX` found no entry under the prefix. */
export class NothingMatchesError extends CidsyncError {
  override readonly code = 'ERR_NOTHING_MATCHES'
  override readonly exitCode = ExitCode.notFound
}

/** The index (the sync state, the local service's database) was written by a newer cidsync than this one. */
export class SchemaTooNewError extends CidsyncError {
  override readonly code = 'ERR_SCHEMA_TOO_NEW'

  constructor (readonly path: string, readonly found: number, readonly known: number, what: 'index' | 'sync state' | 'service database' = 'index') {
    super(`the ${what} ${path} has schema version ${found}, but this cidsync knows versions up to ${known}: upgrade cidsync${what === 'index' ? ', or restore the index on this device' : ''}`)
  }
}

/** The index file does not exist where a read-only command expected it. */
export class IndexMissingError extends CidsyncError {
  override readonly code = 'ERR_INDEX_MISSING'
  override readonly exitCode = ExitCode.notFound

  constructor (readonly path: string, todo = 'start the daemon (cidsync daemon) or restore one (cidsync restore)') {
    super(`no index at ${path}: ${todo}`)
  }
}

/**
 * The state dir's `device-id` file is damaged and the index does not say which device this is:
 * a new id would leave this device's rows behind as another device's for good, so nothing starts.
 */
export class DeviceIdDamagedError extends CidsyncError {
  override readonly code = 'ERR_DEVICE_ID_DAMAGED'
  override readonly exitCode = ExitCode.usage
}

/** cidsync's own files are not where it is installed: its package.json is not above its code. */
export class InstallDamagedError extends CidsyncError {
  override readonly code = 'ERR_INSTALL_DAMAGED'
}

/** Another daemon already runs on this state dir. */
export class LockHeldError extends CidsyncError {
  override readonly code = 'ERR_LOCK_HELD'

  /** `advice`: what to do, when the command that met the lock knows better than a second daemon would. */
  constructor (readonly lockPath: string, readonly holder: string, advice = 'stop it first, or give this one its own state_dir') {
    super(`another cidsync daemon holds ${lockPath} (${holder}): ${advice}`)
  }
}

/** The daemon could not start because the disk holding its state dir is full. */
export class StateDiskFullError extends CidsyncError {
  override readonly code = 'ERR_STATE_DISK_FULL'

  constructor (readonly stateDir: string, options?: ErrorOptions) {
    super(`cannot start: the disk holding the state dir ${stateDir} is full (${(options?.cause as Error | undefined)?.message ?? 'no space left'}): ` +
      `free space in ${stateDir} (or on its file system), then start the daemon again`, options)
  }
}

/**
 * Writing in the state dir failed on this machine's side (a full disk, a quota, a read-only or
 * failing file system) while a restore or a fetch wrote there: nothing was installed, and the
 * service's data is not in question (unlike {@link SnapshotIntegrityError}, exit 4).
 */
export class StateWriteError extends CidsyncError {
  override readonly code = 'ERR_STATE_WRITE'

  constructor (readonly stateDir: string, readonly reason: string, options?: ErrorOptions) {
    super(`writing in the state dir ${stateDir} failed (${reason}): ${IndexWriteError.why(ERRNO_AS_SQLITE[reason] ?? reason, options?.cause)}; ` +
      'nothing was installed or changed: run the command again once it can write there', options)
  }
}

/** The kernel refused another inotify watch. */
export class WatchLimitError extends CidsyncError {
  override readonly code = 'ERR_WATCH_LIMIT'

  constructor (readonly folder: string, options?: ErrorOptions) {
    super(`out of inotify watches while watching ${folder}: raise the limit with ` +
      '`sudo sysctl fs.inotify.max_user_watches=524288` (persist it in /etc/sysctl.d/90-cidsync.conf), ' +
      'or add ignore rules for large trees you do not need indexed', options)
  }
}

/** A folder's scan thread failed or ended before it was done: the folder is not fully indexed. */
export class ScanFailedError extends CidsyncError {
  override readonly code = 'ERR_SCAN_FAILED'
}

/** A watched folder is missing or not a directory. */
export class FolderError extends CidsyncError {
  override readonly code = 'ERR_FOLDER'
  override readonly exitCode = ExitCode.usage
}

/** The daemon's status endpoint could not be reached or answered badly. */
export class StatusUnavailableError extends CidsyncError {
  override readonly code = 'ERR_STATUS_UNAVAILABLE'
}

/** What listens on the daemon's status address could not prove it holds the status token: nothing secret was sent to it. */
export class DaemonUnprovenError extends CidsyncError {
  override readonly code = 'ERR_DAEMON_UNPROVEN'
}

/**
 * What the running daemon met doing what it was asked (a publish through `cidsync snapshot`): its
 * message, code and exit code as the daemon answered them, so the CLI says the same as when it
 * does the work itself.
 */
export class DaemonReportedError extends CidsyncError {
  override readonly code: string
  override readonly exitCode: ExitCodeValue

  constructor (message: string, code: string, exitCode: number) {
    super(message)
    this.code = code
    this.exitCode = (Object.values(ExitCode) as number[]).includes(exitCode) && exitCode !== ExitCode.ok ? exitCode as ExitCodeValue : ExitCode.failure
  }
}

/** The daemon cannot do that yet (the index is still being scanned, the service being reached); ask again soon. */
export class NotReadyError extends CidsyncError {
  override readonly code = 'ERR_NOT_READY'

  constructor (message: string, readonly retryAfterSeconds = 1) {
    super(message)
  }
}

/** `cidsync status --check` found something in error (a folder, the service, publishing). */
export class StatusCheckError extends CidsyncError {
  override readonly code = 'ERR_STATUS_CHECK'
}

/** `cidsync dashboard` cannot make a link a browser can open (the endpoint is a unix socket). */
export class DashboardUnavailableError extends CidsyncError {
  override readonly code = 'ERR_DASHBOARD_UNAVAILABLE'
  override readonly exitCode = ExitCode.usage
}

/** `cidsync service install|uninstall`: the service manager (systemctl, launchctl) is missing or failed. */
export class ServiceManagerError extends CidsyncError {
  override readonly code = 'ERR_SERVICE_MANAGER'
}

/** The status endpoint could not listen where the config says. */
export class ListenError extends CidsyncError {
  override readonly code = 'ERR_LISTEN'
}

const INDEX_WRITE_ADVICE: Record<string, string> = {
  SQLITE_FULL: 'the disk (or the file system\'s quota) holding it is full: free some space',
  SQLITE_READONLY: 'it cannot be written (a read-only file, directory or file system): make it writable by the daemon\'s user',
  SQLITE_CORRUPT: 'the database is damaged (a failing disk, or another program wrote into it)',
  SQLITE_NOTADB: 'the file is not a database any more (another program overwrote it)',
  SQLITE_BUSY: 'another program holds a write lock on it: close whatever opened it for writing',
  SQLITE_IOERR: 'the disk answered with an I/O error: check the disk (dmesg, smartctl)'
}

/** The SQLite family of a result code: SQLITE_IOERR_WRITE is an SQLITE_IOERR. */
function sqliteFamily (code: string): string {
  return Object.keys(INDEX_WRITE_ADVICE).find(known => code === known || code.startsWith(`${known}_`)) ?? code
}

/**
 * A batch of index writes failed. The changes are kept (newer ones merged in) and written again
 * after a back-off; `sqliteCode` is SQLite's (`SQLITE_FULL`, `SQLITE_READONLY`...).
 */
export class IndexWriteError extends CidsyncError {
  override readonly code = 'ERR_INDEX_WRITE'

  constructor (readonly path: string, readonly sqliteCode: string, readonly pending: number, options?: ErrorOptions) {
    super(`writing the index ${path} failed (${sqliteCode}): ${IndexWriteError.why(sqliteCode, options?.cause)}; ` +
      `${pending} change${pending === 1 ? ' is' : 's are'} kept and written again once it can`, options)
  }

  /** What is wrong and what to do, for a SQLite result code. */
  static why (sqliteCode: string, cause?: unknown): string {
    return INDEX_WRITE_ADVICE[sqliteFamily(sqliteCode)] ?? (cause as Error | undefined)?.message ?? 'unknown error'
  }

  /** A damaged database: retrying cannot help, a restart (which checks and rebuilds it) can. */
  get damaged (): boolean {
    const family = sqliteFamily(this.sqliteCode)
    return family === 'SQLITE_CORRUPT' || family === 'SQLITE_NOTADB'
  }
}

/** What the system said of a write, as SQLite would: a file system's ENOSPC is SQLite's SQLITE_FULL. */
const ERRNO_AS_SQLITE: Record<string, string> = { ENOSPC: 'SQLITE_FULL', EDQUOT: 'SQLITE_FULL', EROFS: 'SQLITE_READONLY', EIO: 'SQLITE_IOERR' }

/**
 * A publish could not write its files or `sync.sqlite` in the state dir (a full disk, a read-only
 * file system): it resumes at its step once it can. `reason` is SQLite's or the system's code.
 */
export class PublishWriteError extends CidsyncError {
  override readonly code = 'ERR_PUBLISH_WRITE'

  constructor (readonly stateDir: string, readonly reason: string, options?: ErrorOptions) {
    super(`publishing could not write in the state dir ${stateDir} (${reason}): ${IndexWriteError.why(ERRNO_AS_SQLITE[reason] ?? reason, options?.cause)}; ` +
      'nothing was lost: the publish resumes where it stopped on its next run (its schedule, or `cidsync snapshot`)', options)
  }

  /** The error for `err` when it is a local write failure (SQLite's or the file system's), else undefined. */
  static of (stateDir: string, err: unknown): PublishWriteError | undefined {
    const code = (err as { code?: unknown } | undefined)?.code
    if (typeof code !== 'string' || !(code.startsWith('SQLITE_') || code in ERRNO_AS_SQLITE)) return undefined
    return new PublishWriteError(stateDir, code, { cause: err })
  }
}

/** Index writes failed for good (a damaged database, or too many changes held): the daemon stops. */
export class IndexWriteFatalError extends CidsyncError {
  override readonly code = 'ERR_INDEX_WRITE_FATAL'

  constructor (readonly last: IndexWriteError, why: string) {
    super(`the daemon stopped: ${why}: the index ${last.path} cannot be written (${last.sqliteCode}): ` +
      `${IndexWriteError.why(last.sqliteCode, last.cause)}. Nothing is lost: once it can be written, start the daemon again and its scan finds every change not written`, { cause: last })
  }
}

const HASH_REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory',
  ERR_FILE_CHANGED: 'it changed while it was being read',
  ERR_NOT_A_FILE: 'it is not a regular file'
}

/**
 * Reading a file for its CID failed. `reason` is the errno-style code (`ENOENT`, `EACCES`,
 * `ERR_FILE_CHANGED`...), so callers can tell a vanished file from an unreadable one.
 */
export class HashError extends CidsyncError {
  override readonly code = 'ERR_HASH'

  constructor (readonly path: string, readonly reason: string, options?: ErrorOptions) {
    super(`could not hash ${path}: ${HASH_REASONS[reason] ?? reason}`, options)
  }
}

/** An operation was cancelled through its AbortSignal. */
export class AbortedError extends CidsyncError {
  override readonly code = 'ERR_ABORTED'

  constructor (message = 'the operation was aborted') {
    super(message)
  }
}

/**
 * Ctrl-C or SIGTERM stopped a command that brings files back: what was put in place stays, the
 * rest was left as it was, and no temp file stays behind. Running it again finishes it.
 */
export class InterruptedError extends CidsyncError {
  override readonly code = 'ERR_INTERRUPTED'
  override readonly exitCode: ExitCodeValue

  constructor (message: string, signal: string) {
    super(message)
    this.exitCode = signal === 'SIGTERM' ? ExitCode.terminated : ExitCode.interrupted
  }
}

/** Maps anything thrown to an exit code: ours carry one, the rest are plain failures. */
export function exitCodeOf (err: unknown): ExitCodeValue {
  return err instanceof CidsyncError ? err.exitCode : ExitCode.failure
}

/** Where a remote failure happened, never with a secret: method, URL without credentials. */
export interface RemoteContext {
  readonly service: string
  readonly method: string
  readonly url: string
}

/** Any failure talking to the service: a status it refused with, the network, a bad answer. */
export class RemoteError extends CidsyncError {
  override readonly code: string = 'ERR_REMOTE'

  constructor (readonly context: RemoteContext, message: string, options?: ErrorOptions) {
    super(`${context.service}: ${context.method} ${context.url}: ${message}`, options)
  }
}

/** The service answered with a status that is not success (after any retries). */
export class RemoteStatusError extends RemoteError {
  override readonly code: string = 'ERR_REMOTE_STATUS'

  constructor (context: RemoteContext, readonly status: number, readonly excerpt: string, readonly hint: string) {
    super(context, `answered ${status}${excerpt === '' ? '' : ` (${excerpt})`}${hint === '' ? '' : `: ${hint}`}`)
  }
}

/** 401 or 403: the credential is missing, wrong or expired. Retrying will not help. */
export class RemoteUnauthorizedError extends RemoteStatusError {
  override readonly code = 'ERR_REMOTE_UNAUTHORIZED'
}

/** 404: nothing there (a pointer never PUT, an unknown CID). */
export class RemoteNotFoundError extends RemoteStatusError {
  override readonly code = 'ERR_REMOTE_NOT_FOUND'
  override readonly exitCode = ExitCode.notFound
}

/** No answer: connection refused or reset, DNS, a timeout (after any retries). */
export class RemoteNetworkError extends RemoteError {
  override readonly code = 'ERR_REMOTE_NETWORK'
}

/** An answer whose body does not have the shape the service documents. */
export class RemoteResponseError extends RemoteError {
  override readonly code = 'ERR_REMOTE_RESPONSE'
}

/** Bytes that do not hash to the CID they were fetched for, or a CID the service computed differently. */
export class IntegrityError extends CidsyncError {
  override readonly code = 'ERR_INTEGRITY'
  override readonly exitCode = ExitCode.integrity
}

/** No pointer stored for a namespace and network: exit 3. */
export class PointerNotFoundError extends CidsyncError {
  override readonly code = 'ERR_POINTER_NOT_FOUND'
  override readonly exitCode = ExitCode.notFound

  /** `asked`: which service was asked and what to do, when the caller knows (the CLI's commands). */
  constructor (readonly namespace: string, readonly network: string, options?: ErrorOptions & { asked?: string }) {
    super(`nothing stored for namespace ${namespace} on network ${network}${options?.asked === undefined ? '' : `: ${options.asked}`}`, options)
  }
}

/** A snapshot file that is not one this cidsync reads: wrong magic, format version or engine. */
export class SnapshotFormatError extends CidsyncError {
  override readonly code = 'ERR_SNAPSHOT_FORMAT'
  override readonly exitCode = ExitCode.integrity
}

/** A snapshot encrypted with another key than this device has. */
export class SnapshotKeyError extends CidsyncError {
  override readonly code = 'ERR_SNAPSHOT_KEY'
  override readonly exitCode = ExitCode.integrity
}

/** A snapshot whose bytes were changed (authentication failed) or whose database is damaged. */
export class SnapshotIntegrityError extends CidsyncError {
  override readonly code = 'ERR_SNAPSHOT_INTEGRITY'
  override readonly exitCode = ExitCode.integrity
}

/**
 * A manifest made for another namespace or network (its binding is inside the sealed body, so
 * only a holder of the key could have made it): replayed behind this pointer, it is never merged.
 */
export class ManifestNamespaceError extends CidsyncError {
  override readonly code = 'ERR_MANIFEST_NAMESPACE'
  override readonly exitCode = ExitCode.integrity
}

/**
 * A manifest names a device at a sequence far past what it can have written (this device past
 * its own publishes, another past a sane growth): forged by a key holder to stop it for good.
 * That device's list is refused; the rest of the manifest is merged.
 */
export class SequenceImplausibleError extends CidsyncError {
  override readonly code = 'ERR_SEQUENCE_IMPLAUSIBLE'
  override readonly exitCode = ExitCode.integrity
}

/** A publish job in sync.sqlite has a step this cidsync does not know: the job is given up and the next publish starts over. */
export class PublishStateError extends CidsyncError {
  override readonly code = 'ERR_PUBLISH_STATE'
}

/** Other devices kept publishing between this one's read and write of the pointer: the job starts over after a wait. */
export class PublishContendedError extends CidsyncError {
  override readonly code = 'ERR_PUBLISH_CONTENDED'
}

/** A forget cannot be planned: the history holds a publish this device cannot read, or is too long to walk. */
export class ForgetRefusedError extends CidsyncError {
  override readonly code = 'ERR_FORGET_REFUSED'
  override readonly exitCode = ExitCode.integrity
}

/** Another device published while a forget ran: nothing was forgotten, and the next run plans again. */
export class ForgetContendedError extends CidsyncError {
  override readonly code = 'ERR_FORGET_CONTENDED'
}

/** A prune cannot be planned: the history holds a publish this device cannot read, or is too long to walk. */
export class PruneRefusedError extends CidsyncError {
  override readonly code = 'ERR_PRUNE_REFUSED'
  override readonly exitCode = ExitCode.integrity
}

/**
 * The service refused to delete some objects a prune asked it to (uploads under a permanent plan):
 * the rest were deleted. The reasons come already made safe and bounded.
 */
export class PruneDeletesRefusedError extends CidsyncError {
  override readonly code = 'ERR_PRUNE_DELETES_REFUSED'

  constructor (readonly refused: { readonly objects: number, readonly bytes: number, readonly sample: readonly string[], readonly reasons: readonly string[] }) {
    const many = refused.objects === 1 ? 'object' : 'objects'
    const first = refused.sample.slice(0, 3).join(', ')
    super([
      `the service refused to delete ${refused.objects} ${many} (${formatBytes(refused.bytes)}) no kept publish needs: ${refused.reasons.join('; ')}.`,
      `Everything else was deleted. ${refused.objects === 1 ? 'It stays' : 'They stay'} on the account, and each prune asks again${first === '' ? '' : ` (${first}${refused.sample.length > 3 || refused.objects > 3 ? ', …' : ''})`}.`,
      'If the service keeps uploads under your plan for good, nothing is lost but their space.',
      'Otherwise check the account with the service, then run `cidsync prune` again.'
    ].join(' '))
  }
}

/** Another device published while a prune read the history: nothing was deleted, and the next run plans again. */
export class PruneContendedError extends CidsyncError {
  override readonly code = 'ERR_PRUNE_CONTENDED'
}

/**
 * A forget or prune would read a history that lacks this device's own last publish: the pointer
 * was set back (a service restored from a backup, or lying), or a device published over it
 * without merging. Run on it, a prune would delete what that publish names. Nothing was changed.
 */
export class RetentionSetBackError extends CidsyncError {
  override readonly code = 'ERR_RETENTION_POINTER_SET_BACK'
  override readonly exitCode = ExitCode.integrity
}

/**
 * A prune list sealed under this repository's key in a body version this cidsync does not read:
 * a newer cidsync pruned. Taken as naming nothing, what a publish names could be deleted.
 */
export class PruneListNewerError extends CidsyncError {
  override readonly code = 'ERR_PRUNE_LIST_NEWER'
  override readonly exitCode = ExitCode.integrity
}

/**
 * A publish would drop many of this device's entries at once (a folder emptied by mistake, an
 * unmounted disk, a lost index): held until someone confirms it.
 */
export class PublishHeldError extends CidsyncError {
  override readonly code = 'ERR_PUBLISH_HELD'

  constructor (message: string, readonly dropping: number, readonly of: number) {
    super(message)
  }
}

/** The pointer names a snapshot that cannot be fetched or opened here: every publish stops there until it is repaired. */
export class PointerUnreadableError extends CidsyncError {
  override readonly code = 'ERR_POINTER_UNREADABLE'

  constructor (message: string, readonly cid: string, options?: ErrorOptions) {
    super(message, options)
  }
}

/**
 * A past publish asked for (`get --at`) would come from a pointer whose history lacks this
 * device's own last publish, made before that time: the pointer was set back (or a device
 * published over it without merging). Answering from it would pass an older state off as that time's.
 */
export class PointerRolledBackError extends CidsyncError {
  override readonly code = 'ERR_POINTER_ROLLED_BACK'
  override readonly exitCode = ExitCode.integrity
}

/** `restore --at`: the history holds nothing published at or before that time. */
export class NothingAtTimeError extends CidsyncError {
  override readonly code = 'ERR_NOTHING_AT_TIME'
  override readonly exitCode = ExitCode.notFound
}

/** A CAR file (`cidsync import --car`) holds a block whose bytes are not what its CID names: damaged or forged. */
export class CarBlockMismatchError extends CidsyncError {
  override readonly code = 'ERR_CAR_BLOCK_MISMATCH'
  override readonly exitCode = ExitCode.integrity

  constructor (message: string, readonly cid: string, options?: ErrorOptions) {
    super(message, options)
  }
}

/** A file given to `cidsync import --car` is not a CAR cidsync can take: it does not parse, has no single root, or a block's hash cannot be checked. */
export class CarFormatError extends CidsyncError {
  override readonly code = 'ERR_CAR_FORMAT'
  override readonly exitCode = ExitCode.integrity
}

/** `cidsync export`: an object the export needs could not be fetched; no CAR was written. */
export class ExportIncompleteError extends CidsyncError {
  override readonly code = 'ERR_EXPORT_INCOMPLETE'

  constructor (message: string, readonly cid: string, options?: ErrorOptions) {
    super(message, options)
  }
}

/**
 * `cidsync export --dir`: the directory's pointer names a publish that is not in the history
 * exported (a later one, or another line): it is not moved back.
 */
export class ExportPointerAheadError extends CidsyncError {
  override readonly code = 'ERR_EXPORT_POINTER_AHEAD'
}

/** `cidsync export`: FILE (its temp file beside it) could not be written: no directory, not writable, a directory, a full disk. */
export class ExportWriteError extends CidsyncError {
  override readonly code = 'ERR_EXPORT_WRITE'
}

/** `cidsync generate`: a man page, completion script or reference page could not be written. */
export class GenerateWriteError extends CidsyncError {
  override readonly code = 'ERR_GENERATE_WRITE'

  constructor (readonly path: string, cause: unknown) {
    const why = (cause as { code?: unknown }).code ?? (cause instanceof Error ? cause.message : String(cause))
    super(`could not write ${path} (${String(why)}): give a path in a directory you may write to`, { cause })
  }
}

/** `cidsync export`: the disk took no more of the CAR (a write that wrote nothing); the temp file is removed. */
export class CarWriteError extends CidsyncError {
  override readonly code = 'ERR_CAR_WRITE'

  constructor (readonly path: string, readonly at: number) {
    super(`writing the CAR ${path} stopped at ${at} bytes: the disk took no more; free space there (or export to another disk), then export again`)
  }
}

/** `cidsync export`: the thread that hashes its blocks failed or stopped; the blocks it held were never written. */
export class HashThreadError extends CidsyncError {
  override readonly code = 'ERR_HASH_THREAD'
}

/** `cidsync import`: the CAR's chain does not open under this device's key, or is bound elsewhere: the pointer was not moved. */
export class ImportRefusedError extends CidsyncError {
  override readonly code = 'ERR_IMPORT_REFUSED'
  override readonly exitCode = ExitCode.integrity

  constructor (message: string, readonly cid: string, options?: ErrorOptions) {
    super(message, options)
  }
}

/** `cidsync import`: the pointer holds a publish the CAR's chain does not (it is newer, or another line): not moved without `--force`. */
export class ImportOlderError extends CidsyncError {
  override readonly code = 'ERR_IMPORT_OLDER'
}

/** `find`, `where`, `dupes`, `log`: the index holds nothing that answers (exit 3, as `grep` finding nothing exits non-zero). */
export class NothingFoundError extends CidsyncError {
  override readonly code = 'ERR_NOTHING_FOUND'
  override readonly exitCode = ExitCode.notFound
}

/** A segment or manifest that a restore needs cannot be fetched, verified, decrypted or checked: names it. */
export class SegmentUnusableError extends CidsyncError {
  override readonly code = 'ERR_SEGMENT_UNUSABLE'
  override readonly exitCode = ExitCode.integrity

  constructor (message: string, readonly cid: string, options?: ErrorOptions) {
    super(message, options)
  }
}

/**
 * A restore drill failed for a reason other than an object it names (a database error while
 * building the index aside, a forged manifest no check caught): recorded as a failed drill.
 */
export class DrillFailedError extends CidsyncError {
  override readonly code = 'ERR_DRILL_FAILED'
  override readonly exitCode = ExitCode.integrity

  constructor (readonly cid: string, cause: unknown) {
    super(`the restore drill of ${cid} failed (${(cause as Error | undefined)?.message ?? String(cause)}): a restore of it would likely fail too; ` +
      'status shows it as not restorable. Run `cidsync verify` again; if it fails again, publish from a device whose index is good (`cidsync snapshot`) or put this device\'s index over it with `cidsync pointer repair`', { cause })
  }
}

/** A directory named as an object store is not one cidsync made, or cannot be read. */
export class DirectoryStoreError extends CidsyncError {
  override readonly code = 'ERR_DIRECTORY_STORE'
  override readonly exitCode = ExitCode.usage
}

/** Every gateway answered 404 for a CID: it is not stored (or not any more). */
export class ContentNotFoundError extends CidsyncError {
  override readonly code = 'ERR_CONTENT_NOT_FOUND'
  override readonly exitCode = ExitCode.notFound
}

/** 400 or 422: the service refused what it was given. Retrying will not help; the input must change. */
export class RemoteBadRequestError extends RemoteStatusError {
  override readonly code = 'ERR_REMOTE_BAD_REQUEST'
  override readonly exitCode = ExitCode.usage
}

/**
 * The uploads listing could not be read to its end: the service sent the same page again for the
 * next cursor. Partial listings are never passed off as whole ones.
 */
export class RemoteListingError extends RemoteError {
  override readonly code = 'ERR_LISTING_INCOMPLETE'

  constructor (context: RemoteContext, readonly records: number, readonly totalFiles: number, readonly lastKey: string) {
    super(context, `the listing stopped after ${records} of ${totalFiles} files: asked for the page after ${lastKey.slice(0, 100)}, the service sent records already read (it does not move its cursor), so the rest cannot be read; try again later, and report it to the service if it persists`)
  }
}

/** A text given as a CID is not one. */
export class InvalidCidError extends CidsyncError {
  override readonly code = 'ERR_INVALID_CID'
  override readonly exitCode = ExitCode.usage

  constructor (readonly text: string, readonly what = 'CID') {
    super(`${text.slice(0, 100)} is not a valid ${what}: give a CID such as bafy… or Qm…`)
  }
}

/**
 * An IPNS record that fails its check: not signed by the key its name is made from, expired,
 * malformed or too large. Nothing it says was believed.
 */
export class IpnsRecordInvalidError extends CidsyncError {
  override readonly code = 'ERR_NAME_RECORD_INVALID'
  override readonly exitCode = ExitCode.integrity

  constructor (readonly ipnsName: string, readonly reason: string, options?: ErrorOptions) {
    super(`the IPNS record for ${ipnsName.slice(0, 100)} is not valid (${reason}): it was refused; the service or gateway that gave it may be set back or forged`, options)
  }
}

/** An IPNS key the account does not have. */
export class NameNotFoundError extends CidsyncError {
  override readonly code = 'ERR_NAME_NOT_FOUND'
  override readonly exitCode = ExitCode.notFound

  /** `nameOfId`: the name of the key whose id `keyName` is (an id given where its name belongs). */
  constructor (readonly keyName: string, options?: ErrorOptions, nameOfId?: string) {
    super(nameOfId === undefined
      ? `the account has no IPNS key named ${keyName.slice(0, 100)}: \`cidsync names list\` shows its keys, \`cidsync names create\` makes one`
      : `${keyName.slice(0, 100)} is the id of the IPNS key named ${nameOfId}, not its name: give its name, ${nameOfId}, instead`, options)
  }
}

/** A snapshot without a cipher, while this device's config encrypts: it could have been put there by anyone. */
export class SnapshotUnencryptedError extends CidsyncError {
  override readonly code = 'ERR_SNAPSHOT_UNENCRYPTED'
  override readonly exitCode = ExitCode.integrity
}

/** A snapshot whose body inflates past what its header allows (a decompression bomb, or damage). */
export class SnapshotTooLargeError extends CidsyncError {
  override readonly code = 'ERR_SNAPSHOT_TOO_LARGE'
  override readonly exitCode = ExitCode.integrity
}

/** `index.sqlite` is not a database, or fails SQLite's quick check: it must not be written on. */
export class IndexDamagedError extends CidsyncError {
  override readonly code = 'ERR_INDEX_DAMAGED'
  override readonly exitCode = ExitCode.integrity

  constructor (readonly path: string, readonly problem: string, options?: ErrorOptions) {
    super(`the index ${path} is damaged (${problem}): start \`cidsync daemon\`, which moves it aside and rebuilds it from the folders`, options)
  }
}

/** `sync.sqlite` (publish progress) is not a database or is damaged. */
export class SyncStateDamagedError extends CidsyncError {
  override readonly code = 'ERR_SYNC_STATE_DAMAGED'
  override readonly exitCode = ExitCode.integrity

  constructor (readonly path: string, readonly problem: string, options?: ErrorOptions) {
    super(`the sync state ${path} is damaged (${problem}): restart \`cidsync daemon\`, which moves it aside and starts it afresh (the next publish merges the pointer first)`, options)
  }
}

/** Stored content did not open or did not hash to its file's CID: a damaged, truncated or forged object. */
export class ContentIntegrityError extends CidsyncError {
  override readonly code = 'ERR_CONTENT_INTEGRITY'
  override readonly exitCode = ExitCode.integrity
}

/** A file being brought back did not fit: the disk holding its target is full (nothing half-written is left). */
export class TargetDiskFullError extends CidsyncError {
  override readonly code = 'ERR_TARGET_DISK_FULL'
}

/**
 * A file being brought back found another where it goes, one that was not there (or not to be
 * replaced) when it was checked: the one there is kept.
 */
export class TargetExistsError extends CidsyncError {
  override readonly code = 'ERR_TARGET_EXISTS'
}

/**
 * A directory on the way to where a file is brought back is not a real directory: a file, or a
 * symlink (never written through), found there or swapped in while the restore ran. A local
 * layout to fix, not damaged content: nothing was written through it.
 */
export class TargetPathError extends CidsyncError {
  override readonly code = 'ERR_TARGET_PATH'
}

/** A path asked for is not in the index (at the time asked for). */
export class PathNotFoundError extends CidsyncError {
  override readonly code = 'ERR_PATH_NOT_FOUND'
  override readonly exitCode = ExitCode.notFound
}

/** Every file came back, but `--delete` could not remove some local entries; each is named with why. */
export class ExtraNotDeletedError extends CidsyncError {
  override readonly code = 'ERR_NOT_DELETED'
}

/** Some files asked for could not be brought back; each is named with why. */
export class FilesNotRestoredError extends CidsyncError {
  override readonly code = 'ERR_FILES_NOT_RESTORED'
  override readonly exitCode: ExitCodeValue

  /** `integrity`: some file's stored bytes were refused (exit 4), else exit 1. */
  constructor (message: string, readonly integrity: boolean) {
    super(message)
    this.exitCode = integrity ? ExitCode.integrity : ExitCode.failure
  }
}

/** Some files of storing folders were not stored: a publish lists them, but cannot bring them back. */
export class ContentNotStoredError extends CidsyncError {
  override readonly code = 'ERR_CONTENT_NOT_STORED'
}

/** A publish went through, but a folder could not be read: the index holds its files as it last saw them. */
export class FoldersNotIndexedError extends CidsyncError {
  override readonly code = 'ERR_FOLDERS_NOT_INDEXED'
}

/** The dashboard's download of a file larger than it serves (it is staged in the state dir first). */
export class DownloadTooLargeError extends CidsyncError {
  override readonly code = 'ERR_DOWNLOAD_TOO_LARGE'
}

/** The dashboard's download would not fit beside the state dir's own files (it is staged there first). */
export class DownloadNoRoomError extends CidsyncError {
  override readonly code = 'ERR_DOWNLOAD_NO_ROOM'
}

/** Every gateway failed to give an object's bytes (neither a 404 from all nor bytes that did not match). */
export class GatewayFetchError extends CidsyncError {
  override readonly code = 'ERR_GATEWAY_FETCH'
}

/** No gateway resolved an IPNS name. */
export class NameResolveError extends CidsyncError {
  override readonly code = 'ERR_NAME_RESOLVE'
}

/** Nothing is published for the namespace and network yet, so there is nothing to drill or read. */
export class NothingPublishedError extends CidsyncError {
  override readonly code = 'ERR_NOTHING_PUBLISHED'
  override readonly exitCode = ExitCode.notFound
}

/** The pointer holds a snapshot of an engine cidsync does not write: it is left alone. */
export class ForeignPointerError extends CidsyncError {
  override readonly code = 'ERR_POINTER_FOREIGN'
  override readonly exitCode = ExitCode.usage
}

/** The service refused this device's credential: publishing and reconciling wait until it changes. */
export class CredentialRefusedError extends CidsyncError {
  override readonly code = 'ERR_CREDENTIAL_REFUSED'
}

/** The session token's own expiry has passed: publishing waits for a new one. */
export class SessionExpiredError extends CidsyncError {
  override readonly code = 'ERR_SESSION_EXPIRED'
}

/** Something that cannot happen did: a bug in cidsync. The message says what; report it. */
export class InternalError extends CidsyncError {
  override readonly code = 'ERR_INTERNAL'

  constructor (message: string, options?: ErrorOptions) {
    super(`${message} (a bug in cidsync: please report it)`, options)
  }
}

/** The local service's own data does not add up (a pack shorter than its index says): damaged on disk. */
export class ServiceDataDamagedError extends CidsyncError {
  override readonly code = 'ERR_SERVICE_DATA_DAMAGED'
  override readonly exitCode = ExitCode.integrity
}

/** Another process is reclaiming the local service's space, or uploads kept it from finishing: run it again later. */
export class ServiceReclaimBusyError extends CidsyncError {
  override readonly code = 'ERR_SERVICE_RECLAIM_BUSY'
}

/** `--from NAME`, `--mirror NAME` or `login --mirror NAME` names no `[[mirrors]]` table. */
export class MirrorUnknownError extends CidsyncError {
  override readonly code = 'ERR_MIRROR_UNKNOWN'
  override readonly exitCode = ExitCode.usage
}

/**
 * A mirror's saved credentials were signed in for other URLs than the config names now: they are
 * never sent to a listener that was not the one signed in to.
 */
export class MirrorCredentialUnboundError extends CidsyncError {
  override readonly code = 'ERR_MIRROR_CREDENTIAL_UNBOUND'
  override readonly exitCode = ExitCode.usage
}

/** `login --mirror`: the wallet given is the one the primary was signed in with; a mirror could relay its signature to the primary. */
export class WalletSharedError extends CidsyncError {
  override readonly code = 'ERR_WALLET_SHARED'
  override readonly exitCode = ExitCode.usage
}

/** A join file (`cidsync init --join`) that is not one, is damaged, or is readable by others. */
export class BundleInvalidError extends CidsyncError {
  override readonly code = 'ERR_BUNDLE_INVALID'
  override readonly exitCode = ExitCode.usage
}

/**
 * A mirror's pointer holds a publish this device does not know to be older than its own (another
 * device wrote it, or it was forged): it is reported and never overwritten.
 */
export class MirrorPointerAheadError extends CidsyncError {
  override readonly code = 'ERR_MIRROR_POINTER_AHEAD'
}

/** A mirror's pointer went back to an older publish than this device put there: it is moved forward again and reported. */
export class MirrorPointerRolledBackError extends CidsyncError {
  override readonly code = 'ERR_MIRROR_POINTER_ROLLED_BACK'
}

/** The primary failed and every mirror tried after it failed too: each reason named. */
export class MirrorsFailedError extends CidsyncError {
  override readonly code = 'ERR_MIRRORS_FAILED'
}

/**
 * A restore from a mirror would install an older publish than this device's last known pointer
 * (the mirror lags): refused unless `--allow-older`, so an old copy never passes for the latest.
 */
export class MirrorBehindError extends CidsyncError {
  override readonly code = 'ERR_MIRROR_BEHIND'
}
