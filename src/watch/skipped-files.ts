import type { Logger } from 'pino'
import { backoffMs } from '../util/backoff.js'
import { SPECIAL_FILE } from './special-files.js'
import { skippedAdvice } from './skipped-advice.js'

/** A path that is not in the index as it is on disk, and why, as /status shows it. */
export interface SkippedFile {
  /** Relative to the folder, `/`-separated (a directory when `kind` is `dir`). */
  readonly path: string
  readonly kind: 'file' | 'dir'
  /** errno-style: `EACCES`, `EMFILE`, `ERR_FILE_CHANGED`... */
  readonly reason: string
  /** When it was first skipped (ISO). */
  readonly since: string
  /** Attempts after the first. */
  readonly retries: number
  /** When it is tried again (ISO); null when it is not retried (a name that cannot be indexed). */
  readonly nextRetryAt: string | null
  /** What to do about it, in words ({@link skippedAdvice}). */
  readonly advice: string
}

export interface SkipOptions {
  readonly kind?: 'file' | 'dir'
  /** False for what waiting cannot fix; it stays listed until {@link SkippedFiles.clear}. */
  readonly retry?: boolean
  /** A shorter longest wait than the folder's, for a failure that passes soon (EMFILE). */
  readonly maxRetryMs?: number
}

export interface SkippedFilesInit {
  /** Called when a path is due for another try; it reports back with `note` (still failing) or `clear`. */
  readonly onDue: (path: string, kind: 'file' | 'dir') => void
  readonly minRetryMs?: number
  readonly maxRetryMs?: number
  /** The folder's stop: the retry timer goes, and nothing more is listed. */
  readonly signal?: AbortSignal
  /** Where a path is said once, when first listed (with {@link SkippedFiles.skip}). */
  readonly logger?: Logger
  readonly folder?: string
}

/** First retry after a second, doubling up to five minutes: a permission fixed by hand is picked up soon. */
export const DEFAULT_SKIP_RETRY_MIN_MS = 1_000
export const DEFAULT_SKIP_RETRY_MAX_MS = 300_000
/** The reason of a symbolic link left alone (`follow_symlinks = false`): listed, never retried. */
export const SYMLINK_NOT_FOLLOWED = 'ERR_SYMLINK_NOT_FOLLOWED'
/** The reason listed for a name that is not UTF-8: it cannot be a row, and waiting will not fix it. */
export const NAME_NOT_UTF8 = 'ERR_NAME_NOT_UTF8'
/** The longest wait between tries of a path skipped for want of descriptors (EMFILE, ENFILE). */
const TRANSIENT_RETRY_MAX_MS = 10_000

/** How many of a folder's skipped paths status lists (all of them are counted). */
export const SKIPPED_SHOWN = 100

interface Record { kind: 'file' | 'dir', reason: string, since: number, retries: number, nextAt: number | undefined }

/** A link not followed is the folder's setting, and a special file has no bytes: listed, yet nothing of theirs is lost. */
function withoutContent (reason: string | undefined): boolean {
  return reason === SYMLINK_NOT_FOLLOWED || reason === SPECIAL_FILE
}

/**
 * One folder's skipped paths, each retried with a bounded exponential back-off from one timer,
 * so a thousand unreadable files cost one timer, not a thousand. Shared by every part of the
 * watch room that cannot index a path: nothing is left out without being listed here.
 */
export class SkippedFiles {
  private readonly records = new Map<string, Record>()
  /** How many records are {@link withoutContent}: kept as they change, never counted by a walk. */
  private contentless = 0
  private timer: NodeJS.Timeout | undefined
  private timerAt = Infinity
  private closed = false

  constructor (private readonly init: SkippedFilesInit) {
    init.signal?.addEventListener('abort', () => { this.close() }, { once: true })
  }

  get size (): number {
    return this.records.size
  }

  /** Of {@link size}, the links not followed and special files: nothing of theirs goes unprotected. */
  get withoutContent (): number {
    return this.contentless
  }

  has (path: string): boolean {
    return this.records.has(path)
  }

  /** Why the path is listed, if it is. */
  reasonOf (path: string): string | undefined {
    return this.records.get(path)?.reason
  }

  /** Notes a failure (again): answers true the first time, so the caller logs it once. */
  note (path: string, reason: string, options: SkipOptions = {}): boolean {
    const known = this.records.get(path)
    const retries = known === undefined ? 0 : known.retries + 1
    const min = this.init.minRetryMs ?? DEFAULT_SKIP_RETRY_MIN_MS
    const delay = backoffMs({ firstMs: min, maxMs: options.maxRetryMs ?? this.init.maxRetryMs ?? DEFAULT_SKIP_RETRY_MAX_MS, jitter: 'none' }, retries + 1)
    const nextAt = options.retry === false || this.closed ? undefined : Date.now() + delay
    this.contentless += (withoutContent(reason) ? 1 : 0) - (withoutContent(known?.reason) ? 1 : 0)
    this.records.set(path, { kind: options.kind ?? known?.kind ?? 'file', reason, since: known?.since ?? Date.now(), retries: known === undefined ? 0 : retries, nextAt })
    if (nextAt !== undefined) this.arm(nextAt)
    return known === undefined
  }

  /**
   * Lists a path that cannot be indexed, as its reason calls for, and logs it the first time only:
   * a name that is not UTF-8 and a link not followed stay listed without retries (a link is a choice
   * of the config: said at info); out of descriptors is retried often (it passes when the flood
   * does); anything else backs off to the folder's longest wait. Nothing is listed once stopped.
   */
  skip (path: string, reason: string, kind: 'file' | 'dir' = 'file'): void {
    if (this.closed) return
    const where = { folder: this.init.folder, path, reason }
    if (reason === NAME_NOT_UTF8) {
      if (this.note(path, reason, { kind: 'file', retry: false })) this.init.logger?.warn(where, 'file skipped: its name is not valid UTF-8; rename it to index it')
      return
    }
    if (reason === SYMLINK_NOT_FOLLOWED) {
      // Seen again by every walk and watch event: not a retry, so not counted as one.
      if (this.reasonOf(path) === reason) return
      if (this.note(path, reason, { kind: 'file', retry: false })) this.init.logger?.info(where, 'symbolic link skipped: follow_symlinks is off for this folder')
      return
    }
    if (reason === SPECIAL_FILE) {
      if (this.reasonOf(path) === reason) return
      if (this.note(path, reason, { kind: 'file', retry: false })) this.init.logger?.info(where, 'special file skipped (a FIFO, socket or device): it has no content to index or restore')
      return
    }
    const transient = reason === 'EMFILE' || reason === 'ENFILE'
    if (!this.note(path, reason, { kind, maxRetryMs: transient ? TRANSIENT_RETRY_MAX_MS : undefined })) return
    this.init.logger?.warn({ ...where, kind }, kind === 'dir' ? 'directory skipped: it could not be read; retrying' : 'file skipped: it could not be read; retrying')
  }

  /** The paths listed for `reason` under `dir` (directly, unless `recursive`): what a walk of it looks at again. */
  listedUnder (reason: string, dir: string, recursive: boolean): string[] {
    const prefix = dir === '' ? '' : `${dir}/`
    const under: string[] = []
    for (const [path, r] of this.records) {
      if (r.reason === reason && path.startsWith(prefix) && (recursive || !path.slice(prefix.length).includes('/'))) under.push(path)
    }
    return under
  }

  /** The path is indexed, gone or ignored now: it leaves the list. Answers whether it was on it. */
  clear (path: string): boolean {
    if (withoutContent(this.records.get(path)?.reason)) this.contentless--
    return this.records.delete(path)
  }

  /** Clears a directory's entry and everything under it (the directory went away). */
  clearTree (dir: string): void {
    for (const path of [...this.records.keys()]) if (path === dir || path.startsWith(`${dir}/`)) this.clear(path)
  }

  list (limit = SKIPPED_SHOWN): SkippedFile[] {
    const shown: SkippedFile[] = []
    for (const [path, r] of this.records) {
      if (shown.length >= limit) break
      shown.push({ path, kind: r.kind, reason: r.reason, since: new Date(r.since).toISOString(), retries: r.retries, nextRetryAt: r.nextAt === undefined ? null : new Date(r.nextAt).toISOString(), advice: skippedAdvice(r.reason, r.kind) })
    }
    return shown
  }

  close (): void {
    this.closed = true
    clearTimeout(this.timer)
    this.timer = undefined
  }

  private arm (at: number): void {
    if (this.closed || at >= this.timerAt) return
    clearTimeout(this.timer)
    this.timerAt = at
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - Date.now()))
    this.timer.unref()
  }

  private fire (): void {
    this.timer = undefined
    this.timerAt = Infinity
    const now = Date.now()
    let next = Infinity
    for (const [path, r] of this.records) {
      if (r.nextAt === undefined) continue
      if (r.nextAt > now) {
        next = Math.min(next, r.nextAt)
        continue
      }
      // In flight until the caller notes or clears it.
      r.nextAt = undefined
      try {
        this.init.onDue(path, r.kind)
      } catch {
        // The caller's look failed before it could report: try again at the longest wait.
        r.nextAt = now + (this.init.maxRetryMs ?? DEFAULT_SKIP_RETRY_MAX_MS)
      }
    }
    if (next !== Infinity) this.arm(next)
  }
}
