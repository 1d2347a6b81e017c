import type { Index } from '../../index/index.js'
import { backoffMs } from '../../util/backoff.js'
import type { NotStored } from '../content-outcome.js'

/** A failing file waits this long, doubling with each failure, up to the most. */
const FILE_RETRY_FIRST_MS = 30_000
const FILE_RETRY_MAX_MS = 60 * 60_000

/** A file whose content could not be stored, waiting for its retry. */
export interface ContentFailure {
  readonly folder: string
  readonly path: string
  readonly code: string
  readonly message: string
  readonly since: string
  readonly attempts: number
  readonly retryAt: string
  /** What to do about it. */
  readonly advice: string
}

interface Failure { code: string, message: string, since: number, attempts: number, retryAt: number }

/**
 * The files of storing folders whose content failed to store, by `folder/path`: since when, how
 * many tries, and when each is tried again (its own back-off, while the rest go on). The content
 * keeper's one record of them; it keeps them in sync.sqlite so a restart forgets none.
 */
export class ContentFailures {
  private readonly byKey = new Map<string, Failure>()

  get size (): number {
    return this.byKey.size
  }

  /** The file waits for its retry: a pass skips it until then. */
  waiting (folder: string, path: string, now = Date.now()): boolean {
    return (this.byKey.get(`${folder}/${path}`)?.retryAt ?? 0) > now
  }

  /**
   * A file that failed again keeps when its failures began and how many tries it had: the
   * back-off grows, and `failingTooLong` sees the whole span, not the last try.
   */
  note (key: string, code: string, message: string, now: number): void {
    const before = this.byKey.get(key)
    const attempts = (before?.attempts ?? 0) + 1
    const wait = backoffMs({ firstMs: FILE_RETRY_FIRST_MS, maxMs: FILE_RETRY_MAX_MS, jitter: 'spread' }, attempts)
    this.byKey.set(key, { code, message, since: before?.since ?? now, attempts, retryAt: now + wait })
  }

  /** A pass tried these and they did not fail: their failures are over. */
  passed (attempted: Iterable<string>, failedAgain: ReadonlySet<string>): void {
    for (const key of attempted) if (!failedAgain.has(key)) this.byKey.delete(key)
  }

  /** The service answers again: every failure is tried again within `withinMs`. */
  soon (now: number, withinMs: number): void {
    for (const failure of this.byKey.values()) failure.retryAt = Math.min(failure.retryAt, now + withinMs)
  }

  /** When the first failure is due (Infinity with none). */
  nextDue (): number {
    let next = Infinity
    for (const failure of this.byKey.values()) next = Math.min(next, failure.retryAt)
    return next
  }

  /** When the oldest failure began (Infinity with none). */
  oldestSince (): number {
    return Math.min(...[...this.byKey.values()].map(f => f.since))
  }

  /** Every failure as status shows it, with what to do about it. */
  list (): ContentFailure[] {
    return [...this.byKey.entries()].map(([key, f]) => {
      return { ...splitKey(key), code: f.code, message: f.message, since: new Date(f.since).toISOString(), attempts: f.attempts, retryAt: new Date(f.retryAt).toISOString(), advice: contentFailureAdvice(f.code) }
    })
  }

  /** The failures by `folder/path`, for the page's find. */
  byPath (): Map<string, { folder: string, path: string, code: string, message: string, since: string, advice: string }> {
    const failed = new Map<string, { folder: string, path: string, code: string, message: string, since: string, advice: string }>()
    for (const [key, f] of this.byKey) failed.set(key, { ...splitKey(key), code: f.code, message: f.message, since: new Date(f.since).toISOString(), advice: contentFailureAdvice(f.code) })
    return failed
  }

  /** The failing files that are still live and unstored, as a publish reports them. */
  notStored (index: Index, deviceId: string, keyId: string): NotStored[] {
    return [...this.byKey.entries()].flatMap(([key, f]): NotStored[] => {
      const { folder, path } = splitKey(key)
      // A failure of a file since deleted, or stored since, is no longer a file missing.
      if (over(index, deviceId, keyId, folder, path)) return []
      return [{ folder, path, reason: `${f.message} (tried ${f.attempts} times; next at ${new Date(f.retryAt).toISOString()})`, code: f.code }]
    })
  }

  /** Failures of files gone since, or stored since some other way (`cidsync snapshot` on its own), are over. */
  prune (index: Index, deviceId: string, keyId: string): void {
    for (const key of [...this.byKey.keys()]) {
      const { folder, path } = splitKey(key)
      if (over(index, deviceId, keyId, folder, path)) this.byKey.delete(key)
    }
  }

  /**
   * The failures the last run left in the state dir (JSON, as {@link list} gave them): a restart
   * neither hides how long a file has been failing (`status --check` still fails) nor forgets to
   * show it. Those of folders that no longer store are dropped.
   */
  load (json: string | undefined, stores: (folder: string) => boolean): void {
    let list: unknown
    try {
      list = JSON.parse(json ?? '[]')
    } catch {
      return
    }
    for (const f of Array.isArray(list) ? list as Array<Record<string, unknown>> : []) {
      const since = Date.parse(String(f.since))
      const retryAt = Date.parse(String(f.retryAt))
      if (typeof f.folder !== 'string' || typeof f.path !== 'string' || typeof f.code !== 'string' || typeof f.message !== 'string' || !Number.isFinite(since)) continue
      if (!stores(f.folder)) continue
      this.byKey.set(`${f.folder}/${f.path}`, { code: f.code, message: f.message, since, attempts: typeof f.attempts === 'number' ? f.attempts : 1, retryAt: Number.isFinite(retryAt) ? retryAt : Date.now() })
    }
  }
}

function over (index: Index, deviceId: string, keyId: string, folder: string, path: string): boolean {
  const row = index.entries.get(deviceId, folder, path)
  return row === undefined || row.deleted || row.cid === null || index.content.has(row.cid, keyId)
}

/** What to do about a file whose content failed to store, by the failure's code. */
export function contentFailureAdvice (code: string): string {
  switch (code) {
    case 'EACCES':
    case 'EPERM': return 'the file cannot be read: fix its permissions; it is tried again'
    case 'EIO': return 'the disk could not read the file: check the disk; it is tried again'
    case 'ERR_CONTENT_TOO_LARGE': return 'raise [content] max_file_size, or exclude it with [content] exclude'
    case 'ERR_SNAPSHOT_KEY': return 'the snapshot key cannot be read: check snapshot.key or CIDSYNC_SNAPSHOT_PASSPHRASE'
    case 'ERR_REMOTE_UNAUTHORIZED': return 'the service refused the credentials: `cidsync login`; it is tried again'
    case 'ERR_REMOTE_NETWORK': return 'the service cannot be reached: check that it is up and this machine reaches it; it is tried again'
    default: return 'it is tried again with back-off; if it keeps failing, check the service (`cidsync status`) and the log'
  }
}

/** `folder/path` apart (a folder's name has no slash). */
export function splitKey (key: string): { folder: string, path: string } {
  const slash = key.indexOf('/')
  return { folder: key.slice(0, slash), path: key.slice(slash + 1) }
}
