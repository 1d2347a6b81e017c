import { lstat, stat } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { CidProfileName } from '../content/index.js'
import type { EntryStore, KnownFile } from '../index/index.js'
import type { FolderConfig } from '../config/index.js'
import { FolderError, HashError } from '../errors.js'
import type { ChangeWriter } from './change-writer.js'
import { FolderWatcher } from './folder-watcher.js'
import type { HashPool } from './hash-pool.js'
import { createIgnoreMatcher, type IgnoreMatcher } from './ignore.js'
import { walkFiles } from './walk.js'

export type FolderState = 'starting' | 'scanning' | 'watching' | 'error' | 'stopped'

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
  /** Files that could not be read (permissions, I/O errors), each logged once. */
  readonly skipped: number
  readonly error: string | undefined
}

export interface FolderIndexerComponents {
  readonly entries: EntryStore
  readonly pool: HashPool
  readonly writer: ChangeWriter
  readonly logger: Logger
  readonly deviceId: string
}

export interface FolderIndexerInit {
  readonly folder: FolderConfig
  readonly profile: CidProfileName
  readonly settleMs: number
}

const MAX_RETRY_MS = 60_000

/**
 * Keeps one folder's rows true to the disk: a startup scan that hashes only files whose size or
 * mtime moved, then live events, each path settled before it is looked at, so an editor's
 * write-temp-then-rename ends as one change.
 */
export class FolderIndexer {
  private readonly ignore: IgnoreMatcher
  private readonly watcher: FolderWatcher
  private state: FolderState = 'starting'
  private error: string | undefined
  /** This device's rows as the scan began; dropped once the scan is done. */
  private known: Map<string, KnownFile> | undefined
  private seen: Set<string> | undefined
  private readonly settling = new Map<string, NodeJS.Timeout>()
  private readonly hashing = new Set<string>()
  private readonly again = new Set<string>()
  private readonly retries = new Map<string, number>()
  private readonly skippedPaths = new Set<string>()
  private scanned = 0
  private hashed = 0
  private hashedBytes = 0
  private idleWaiters: Array<() => void> = []

  constructor (private readonly components: FolderIndexerComponents, private readonly init: FolderIndexerInit) {
    this.ignore = createIgnoreMatcher(init.folder.ignore)
    this.watcher = new FolderWatcher({ root: init.folder.path, ignore: this.ignore, followSymlinks: init.folder.followSymlinks }, {
      onFile: (rel, stats) => this.observe(rel, stats),
      onPath: (rel) => this.settle(rel),
      onDirAdded: (rel) => { void this.rescan(rel, true) },
      onDirRemoved: (rel) => this.removeTree(rel),
      onDirChanged: (rel) => { void this.rescan(rel, false) },
      onError: (err) => this.fail(err)
    })
  }

  get name (): string {
    return this.init.folder.name
  }

  /** Scans and starts watching; resolves when the watches are up and every scanned file is queued. */
  async start (): Promise<void> {
    // A missing folder (an unmounted disk) is an error to show, never a reason to mark its files deleted.
    const root = await stat(this.init.folder.path).catch(() => undefined)
    if (root === undefined || !root.isDirectory()) {
      this.fail(new FolderError(`folder "${this.name}" at ${this.init.folder.path} ${root === undefined ? 'does not exist' : 'is not a directory'}: ` +
        'create or mount it, or remove it from the config; its indexed files are kept as they were'))
      return
    }
    const { entries, deviceId } = this.components
    this.known = entries.knownFiles(deviceId, this.name)
    this.seen = new Set()
    this.state = 'scanning'
    await this.watcher.start()
    const known = this.known
    const seen = this.seen
    this.known = undefined
    this.seen = undefined
    for (const rel of known.keys()) {
      if (seen.has(rel)) continue
      // Gone while the daemon was down, or ignored by a rule added since.
      if (this.ignore(rel)) this.remove(rel)
      else this.settle(rel, 0)
    }
    if (this.state === 'scanning') this.state = 'watching'
  }

  /** Resolves when nothing is settling or hashing: the folder's rows match the disk as last seen. */
  async idle (): Promise<void> {
    if (this.isIdle()) return
    await new Promise<void>(resolve => this.idleWaiters.push(resolve))
  }

  async stop (): Promise<void> {
    this.state = 'stopped'
    for (const timer of this.settling.values()) clearTimeout(timer)
    this.settling.clear()
    await this.watcher.close()
    this.wakeIdle()
  }

  progress (): FolderProgress {
    return {
      name: this.name,
      path: this.init.folder.path,
      state: this.state,
      scanned: this.scanned,
      toHash: this.settling.size + this.hashing.size,
      hashed: this.hashed,
      hashedBytes: this.hashedBytes,
      skipped: this.skippedPaths.size,
      error: this.error
    }
  }

  private observe (rel: string, stats: Stats | undefined): void {
    if (this.known === undefined || this.seen === undefined) return
    if (this.seen.has(rel)) return
    this.seen.add(rel)
    this.scanned++
    const known = this.known.get(rel)
    if (stats !== undefined && known !== undefined && this.matches(known, stats)) return
    if (stats !== undefined) this.hash(rel, stats.size)
    else this.settle(rel, 0)
  }

  private matches (known: KnownFile, stats: Stats): boolean {
    return known.size === stats.size && known.mtimeMs === stats.mtimeMs && known.cidProfile === this.init.profile
  }

  private settle (rel: string, delay = this.init.settleMs): void {
    if (this.state === 'stopped' || this.ignore(rel)) return
    clearTimeout(this.settling.get(rel))
    this.settling.set(rel, setTimeout(() => {
      this.settling.delete(rel)
      void this.look(rel).finally(() => this.wakeIdle())
    }, delay))
  }

  /** After a path settles: gone, unchanged, or to be hashed. */
  private async look (rel: string): Promise<void> {
    const stats = await this.statOf(rel)
    if (stats === undefined || !stats.isFile()) {
      if (stats === undefined) this.remove(rel)
      return
    }
    const row = this.components.entries.get(this.components.deviceId, this.name, rel)
    if (row !== undefined && !row.deleted && this.matches(row, stats)) return
    this.hash(rel, stats.size)
  }

  private async statOf (rel: string): Promise<Stats | undefined> {
    const path = join(this.init.folder.path, rel)
    try {
      const stats = await lstat(path)
      if (!stats.isSymbolicLink()) return stats
      return this.init.folder.followSymlinks ? await stat(path) : undefined
    } catch {
      return undefined
    }
  }

  private hash (rel: string, sizeHint: number): void {
    if (this.hashing.has(rel)) {
      this.again.add(rel)
      return
    }
    this.hashing.add(rel)
    this.components.pool.hash(join(this.init.folder.path, rel), this.init.profile, { sizeHint })
      .then(result => {
        this.retries.delete(rel)
        this.skippedPaths.delete(rel)
        this.hashed++
        this.hashedBytes += result.size
        this.components.writer.write({ kind: 'upsert', folder: this.name, path: rel, size: result.size, mtimeMs: result.mtimeMs, cid: result.cid, cidProfile: this.init.profile })
      }, (err: unknown) => this.hashFailed(rel, err))
      .finally(() => {
        this.hashing.delete(rel)
        if (this.again.delete(rel)) this.settle(rel)
        this.wakeIdle()
      })
  }

  private hashFailed (rel: string, err: unknown): void {
    if (this.state === 'stopped') return
    const reason = err instanceof HashError ? err.reason : 'EIO'
    if (reason === 'ENOENT' || reason === 'ENOTDIR') {
      this.remove(rel)
    } else if (reason === 'ERR_FILE_CHANGED') {
      // Still being written: look again later, backing off so a growing log is not rehashed nonstop.
      const attempt = (this.retries.get(rel) ?? 0) + 1
      this.retries.set(rel, attempt)
      this.settle(rel, Math.min(this.init.settleMs * 2 ** attempt, MAX_RETRY_MS))
    } else if (!this.skippedPaths.has(rel)) {
      this.skippedPaths.add(rel)
      this.components.logger.warn({ folder: this.name, path: rel, reason, err }, 'file skipped: it could not be read')
    }
  }

  private remove (rel: string): void {
    this.skippedPaths.delete(rel)
    this.components.writer.write({ kind: 'delete', folder: this.name, path: rel })
  }

  private removeTree (relDir: string): void {
    const { entries, deviceId } = this.components
    for (const entry of entries.list({ deviceId, prefix: `${this.name}/${relDir}/` })) this.settle(entry.path, 0)
  }

  private async rescan (relDir: string, recursive: boolean): Promise<void> {
    if (this.ignore(relDir)) return
    const options = { ignore: this.ignore, followSymlinks: this.init.folder.followSymlinks, recursive }
    for await (const file of walkFiles(this.init.folder.path, relDir, options)) this.settle(file.relativePath, 0)
  }

  private fail (err: Error): void {
    if (this.error !== undefined) return
    this.error = err.message
    this.state = 'error'
    this.components.logger.error({ folder: this.name, err }, err.message)
  }

  private isIdle (): boolean {
    return this.state !== 'scanning' && this.state !== 'starting' && this.settling.size === 0 && this.hashing.size === 0
  }

  private wakeIdle (): void {
    if (!this.isIdle() && this.state !== 'stopped') return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    for (const wake of waiters) wake()
  }
}
