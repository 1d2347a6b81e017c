import { lstat, readlink, stat } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { join } from 'node:path'
import { statTuple, type CidProfileName } from '../content/index.js'
import { sameMeta, type EntryChange, type EntryKind, type EntryStore, type KnownFile } from '../index/index.js'
import { HashError } from '../errors.js'
import type { ChangeWriter } from './change-writer.js'
import type { HashPool, HashResult } from './hash-pool.js'
import type { IgnoreMatcher } from './ignore.js'
import type { SkippedFiles } from './skipped-files.js'
import { SPECIAL_FILE, specialFileKind } from './special-files.js'
import { entryMeta } from './entry-meta.js'
import type { Described } from './scan-messages.js'
import { backoffMs } from '../util/backoff.js'

/** The longest wait before a path still being written, or whose row could not be read, is looked at again. */
const MAX_RETRY_MS = 60_000
/** A file still changing after this many looks is listed as skipped (and still looked at). */
const BUSY_LISTED_AFTER = 5

export interface PathStageComponents {
  readonly entries: EntryStore
  readonly pool: HashPool
  readonly writer: ChangeWriter
  readonly skipped: SkippedFiles
  readonly deviceId: string
}

export interface PathStageInit {
  readonly root: string
  readonly folder: string
  readonly followSymlinks: boolean
  readonly profile: CidProfileName
  readonly settleMs: number
  readonly ignore: IgnoreMatcher
  /** The folder's stop: the stage's timers are cleared and every answer still on its way is dropped unwritten. */
  readonly signal: AbortSignal
  /** Whether the root is still the directory the rows were read from: a file missing under it is then really gone. */
  readonly rootIntact: () => Promise<boolean>
  /** A file is missing and the root may be away: the root is looked at now, and no row is touched. */
  readonly rootInDoubt: () => void
  /** A skipped directory was touched: it is tried now rather than at its next retry. */
  readonly retryDir: (relDir: string) => void
  /** Told whenever a path leaves the stage (see {@link PathStage.idle}). */
  readonly onSettled: () => void
}

/**
 * One folder's path from an event to its row, top to bottom:
 *
 *   settle (`settleMs`; a new event for the path restarts the wait)
 *   -> look: stat it, compare with its row (gone: a tombstone; same size and mtime: nothing)
 *   -> hash on the pool's threads
 *   -> its row to the writer, which commits it in a batch
 *
 * A path that cannot be read goes to the folder's {@link SkippedFiles}; one still being written is
 * looked at again after a back-off. The stage owns its timers and retry counts; the folder's
 * signal ends them all, and an answer that comes after it (a look, a hash) writes nothing.
 */
export class PathStage {
  private readonly settling = new Map<string, NodeJS.Timeout>()
  private readonly hashing = new Set<string>()
  /** Paths named again while being hashed: settled once more when the hash answers. */
  private readonly again = new Set<string>()
  /** Looks in a row that found the path still being written, or its row unreadable. */
  private readonly retries = new Map<string, number>()
  /**
   * Looks and descriptions under way (a stat, a link read): until each writes its row, the stage
   * is not idle. Else a catch-up would end, and a `snapshot` publish, before a delete it found.
   */
  private inFlight = 0
  private hashedFiles = 0
  private hashedBytes = 0

  constructor (private readonly components: PathStageComponents, private readonly init: PathStageInit) {
    init.signal.addEventListener('abort', () => { this.cancel() }, { once: true })
  }

  /** Paths settling, being looked at or being hashed. */
  get queued (): number {
    return this.settling.size + this.hashing.size + this.inFlight
  }

  /** Nothing settling or hashing: the rows match the disk as last seen (once written). */
  get idle (): boolean {
    return this.queued === 0
  }

  get hashed (): { readonly files: number, readonly bytes: number } {
    return { files: this.hashedFiles, bytes: this.hashedBytes }
  }

  /** Whether the path is already taken care of: settling, being hashed, or listed as skipped and retried. */
  has (rel: string): boolean {
    return this.settling.has(rel) || this.hashing.has(rel) || this.components.skipped.has(rel)
  }

  /** Looks at the path once it has been quiet for `delay` (the folder's settle time by default). */
  settle (rel: string, delay = this.init.settleMs): void {
    if (this.init.signal.aborted || this.init.ignore(rel)) return
    clearTimeout(this.settling.get(rel))
    this.settling.set(rel, setTimeout(() => {
      this.settling.delete(rel)
      this.owned(this.look(rel), rel)
    }, delay))
  }

  /** Hashes a file a scan found changed (its size from the scan), then writes its row. */
  hash (rel: string, sizeHint: number): void {
    if (this.init.signal.aborted) return
    if (this.hashing.has(rel)) {
      this.again.add(rel)
      return
    }
    this.hashing.add(rel)
    this.components.pool.submit(join(this.init.root, rel), this.init.profile, sizeHint, (err, result) => {
      // Stopped meanwhile: the answer is dropped (the next start's scan finds the file again).
      if (this.init.signal.aborted) return
      this.hashing.delete(rel)
      if (result !== undefined) this.indexed(rel, result)
      else this.hashFailed(rel, err)
      if (this.again.delete(rel)) this.settle(rel)
      this.init.onSettled()
    })
  }

  /** An entry the scan described (a link, a directory, a file whose mode moved): its row written as it says, nothing hashed. */
  described (entry: Described): void {
    const [rel, described, size, mtimeMs, stat, kind, target] = entry
    // Being hashed: the hash's answer writes the row, with what the file is then.
    if (this.hashing.has(rel)) return
    // A file whose mode alone moved keeps its row's CID; without one to keep, it is hashed.
    const cid = kind === 'file' ? this.knownFile(rel)?.cid ?? null : described
    if (kind === 'file' && cid === null) { this.hash(rel, size); return }
    this.write({ kind: 'upsert', folder: this.init.folder, path: rel, size, mtimeMs, cid, cidProfile: this.init.profile, meta: entryMeta(kind, stat, target) })
  }

  /** The path is gone (or ignored now): its row becomes a tombstone. */
  remove (rel: string): void {
    this.components.skipped.clear(rel)
    this.write({ kind: 'delete', folder: this.init.folder, path: rel })
  }

  /** After a path settles: gone, unchanged, or to be hashed. */
  private async look (rel: string): Promise<void> {
    // Being hashed: its answer writes a row after whatever is decided here, so it is looked at once
    // more when the hash answers (a file deleted while it was hashed would keep a row otherwise).
    if (this.hashing.has(rel)) {
      this.again.add(rel)
      return
    }
    // A directory's row has `/` after its path: the directory itself is looked at.
    const dir = rel.endsWith('/')
    const stats = await this.statOf(dir ? rel.slice(0, -1) : rel)
    if (stats === 'unreadable' || this.init.signal.aborted) return
    const { skipped } = this.components
    if (stats === undefined) {
      // Gone, unless the whole folder is: an unmounted disk's files are not deleted ones.
      if (await this.init.rootIntact()) this.remove(rel)
      else this.init.rootInDoubt()
      return
    }
    const row = this.knownFile(rel)
    if (dir || stats.isDirectory()) {
      // A directory's path: its row (`rel/`) is kept as it is; a file's name taken by one loses its row.
      if (!dir && row !== undefined) this.remove(rel)
      if (!stats.isDirectory()) {
        if (row !== undefined) this.remove(rel)
        return
      }
      if (!dir && skipped.has(rel)) this.init.retryDir(rel)
      else if (!dir) skipped.clear(rel)
      this.describedNow(dir ? rel : `${rel}/`, stats, 'dir')
      return
    }
    if (stats.isSymbolicLink()) {
      skipped.clear(rel)
      this.describedNow(rel, stats, 'symlink')
      return
    }
    if (!stats.isFile()) {
      // A FIFO, a socket, a device: nothing of it is indexed; a row it took the name of goes.
      if (row !== undefined) this.remove(rel)
      if (specialFileKind(stats) !== undefined) skipped.skip(rel, SPECIAL_FILE)
      else skipped.clear(rel)
      return
    }
    if (row !== undefined && this.matches(row, stats)) {
      skipped.clear(rel)
      // The same bytes, but its mode, owner or links moved (a chmod moves no mtime): the row is rewritten, nothing hashed.
      const meta = entryMeta('file', statTuple(stats))
      if (row.cid !== undefined && row.cid !== null && !sameMeta(row.meta, meta)) this.write({ kind: 'upsert', folder: this.init.folder, path: rel, size: stats.size, mtimeMs: stats.mtimeMs, cid: row.cid, cidProfile: this.init.profile, meta })
      return
    }
    this.hash(rel, stats.size)
  }

  /** A link's or directory's row, written when it says something new of the entry. */
  private describedNow (rel: string, stats: Stats, kind: EntryKind): void {
    this.owned(this.describeLater(rel, stats, kind), rel)
  }

  /** Counts `work` as under way until it settles; a failure is retried as a failed look. */
  private owned (work: Promise<void>, rel: string): void {
    this.inFlight++
    void work.catch((err: unknown) => { this.lookFailed(rel, err as Error) }).finally(() => {
      this.inFlight--
      this.init.onSettled()
    })
  }

  private async describeLater (rel: string, stats: Stats, kind: EntryKind): Promise<void> {
    const path = join(this.init.root, kind === 'dir' ? rel.slice(0, -1) : rel)
    let target: string | null = null
    if (kind === 'symlink') {
      try {
        target = await readlink(path)
      } catch (err) {
        // Gone or replaced since the stat: the next event or look finds what is there.
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'ENOENT' || code === 'EINVAL') { this.settle(rel); return }
        throw err
      }
    }
    if (this.init.signal.aborted) return
    const meta = entryMeta(kind, statTuple(stats), target)
    const size = kind === 'dir' ? 0 : stats.size
    const row = this.knownFile(rel)
    if (row !== undefined && row.size === size && row.mtimeMs === stats.mtimeMs && sameMeta(row.meta, meta)) return
    this.write({ kind: 'upsert', folder: this.init.folder, path: rel, size, mtimeMs: stats.mtimeMs, cid: null, cidProfile: this.init.profile, meta })
  }

  /**
   * undefined when the path is gone; 'unreadable' (listed as skipped) when it cannot be stat'ed for
   * another reason, such as a directory above it losing its permissions: that is no delete.
   */
  private async statOf (rel: string): Promise<Stats | undefined | 'unreadable'> {
    const path = join(this.init.root, rel)
    try {
      const stats = await lstat(path)
      if (!stats.isSymbolicLink()) return stats
      // A link not followed is described as a link; a followed one as what it leads to.
      return this.init.followSymlinks ? await stat(path) : stats
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO'
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
      this.components.skipped.skip(rel, code)
      return 'unreadable'
    }
  }

  /**
   * The row as it is about to be: a change gathered and not yet committed wins over the committed
   * row. A directory moved away and back within a batch has tombstones queued for files whose rows
   * still look live; compared with those rows, the files would be taken as unchanged and then lost.
   */
  private knownFile (rel: string): KnownFile | undefined {
    const { writer, entries, deviceId } = this.components
    const pending = writer.pendingFor(this.init.folder, rel)
    if (pending !== undefined) return pending.kind === 'delete' ? undefined : { size: pending.size, mtimeMs: pending.mtimeMs, cidProfile: pending.cidProfile, meta: pending.meta ?? null, cid: pending.cid }
    return entries.knownFile(deviceId, this.init.folder, rel)
  }

  private matches (known: KnownFile, stats: Stats): boolean {
    return known.size === stats.size && known.mtimeMs === stats.mtimeMs && known.cidProfile === this.init.profile && (known.meta === null || known.meta.kind === 'file')
  }

  private indexed (rel: string, result: HashResult): void {
    this.retries.delete(rel)
    this.components.skipped.clear(rel)
    this.hashedFiles++
    this.hashedBytes += result.size
    this.write({ kind: 'upsert', folder: this.init.folder, path: rel, size: result.size, mtimeMs: result.mtimeMs, cid: result.cid, cidProfile: this.init.profile, meta: entryMeta('file', result.stat) })
  }

  private hashFailed (rel: string, err: unknown): void {
    const reason = err instanceof HashError ? err.reason : 'EIO'
    if (reason === 'ENOENT' || reason === 'ENOTDIR') {
      this.settle(rel, 0)
    } else if (reason === 'ERR_FILE_CHANGED') {
      // Still being written: look again later, backing off so a growing log is not rehashed nonstop.
      const attempt = this.retried(rel)
      // Busy for long (a log written nonstop): listed, so it is not silently behind.
      if (attempt >= BUSY_LISTED_AFTER) this.components.skipped.note(rel, reason, { retry: false })
      this.settle(rel, this.backoff(attempt))
    } else {
      this.components.skipped.skip(rel, reason)
    }
  }

  /** The index could not be read for this path: counted like a failed write, looked at again later. */
  private lookFailed (rel: string, err: Error): void {
    if (this.init.signal.aborted) return
    this.components.writer.readFailed(err)
    this.settle(rel, this.backoff(this.retried(rel)))
  }

  private retried (rel: string): number {
    const attempt = (this.retries.get(rel) ?? 0) + 1
    this.retries.set(rel, attempt)
    return attempt
  }

  private backoff (attempt: number): number {
    return backoffMs({ firstMs: this.init.settleMs, maxMs: MAX_RETRY_MS, jitter: 'none' }, attempt + 1)
  }

  /** The one place the stage writes: never once the folder stopped. */
  private write (change: EntryChange): void {
    if (!this.init.signal.aborted) this.components.writer.write(change)
  }

  private cancel (): void {
    for (const timer of this.settling.values()) clearTimeout(timer)
    this.settling.clear()
    this.hashing.clear()
    this.again.clear()
    this.retries.clear()
    this.init.onSettled()
  }
}
