import { rm } from 'node:fs/promises'
import { placeFiles } from './fetch-file.js'
import type { SealPool } from './seal-pool.js'

/** A temp file whose plaintext hashed to its row's CID, held open by its sealing thread ({@link unsealFile}). */
export interface UnsealedFile {
  /** Its unseal job, which {@link SealPool.syncUnsealed} takes. */
  readonly job: number
  readonly temp: string
  /** The final path. */
  readonly target: string
  /** The target's directory as joined, and where it really was when it was checked. */
  readonly dir: string
  readonly expectedDir: string
  /** The temp's inode: the file renamed must be the one written. */
  readonly inode: number
  readonly size: number
  /** A file there may be replaced (`FetchFileInit.replace`); else one found there is kept and this one refused. */
  readonly replace?: boolean
}

/**
 * Batches of verified files held open at most: the one being synced, and those filling behind it
 * while it syncs. Each file holds a descriptor; fewer held made a restore wait on its fsyncs.
 */
export const HELD_BATCHES = 4

/** When a batch is synced: this many files, or this many bytes, whichever comes first. */
export interface BatchLimits { readonly files: number, readonly bytes: number }

/** Told once a file is in place (`err` undefined), or why not (its temp removed). */
export type Settle = (err?: unknown) => void

/**
 * Verified files made durable and renamed into place a batch at a time, instead of one fsync in
 * each file's way (docs/content-format.md, "What a crash leaves"). The rule: a file takes its final
 * name only after its bytes are fsynced, so a kill -9 or a power cut at any moment leaves under a
 * final name only whole, verified files; what a kill loses is at most the batches held (temps the
 * next run sweeps and fetches again). A batch's fsyncs are issued
 * together on libuv's threads, where concurrent fsyncs share the filesystem's journal commits.
 * One batch is synced at a time while the next ones fill. {@link add} waits while
 * {@link HELD_BATCHES} batches' files are held open, however many callers add at once.
 */
export class DurableBatch {
  private filling: Array<{ readonly file: UnsealedFile, readonly settle: Settle }> = []
  private bytes = 0
  private syncing: Promise<void> = Promise.resolve()
  private readonly unsettled = new Set<UnsealedFile>()
  /** What a settle threw (an aborted run's): thrown by {@link finish}, not left unhandled. */
  private thrown: { readonly err: unknown } | undefined

  constructor (private readonly pool: SealPool, private readonly limits: BatchLimits) {}

  /** Takes a verified file; answers once there is room for the next (the batch it filled, if any, handed to be synced). */
  async add (file: UnsealedFile, settle: Settle): Promise<void> {
    this.unsettled.add(file)
    this.filling.push({ file, settle })
    this.bytes += file.size
    if (this.filling.length >= this.limits.files || this.bytes >= this.limits.bytes) await this.flush()
    // Several callers add at once, and only the one that fills a batch waits above: the others
    // would fill batch after batch behind the sync, each file holding a descriptor open.
    while (this.unsettled.size > this.limits.files * HELD_BATCHES) await this.syncing
  }

  /** Syncs and places what is left; answers once every file added is settled. */
  async finish (): Promise<void> {
    await this.flush()
    await this.syncing
    if (this.thrown !== undefined) throw this.thrown.err
  }

  /** Waits for the batch being synced, if any, without syncing the one being filled (a run that failed). */
  async drain (): Promise<void> {
    await this.syncing
  }

  /**
   * Removes the temps of files not in place (a run given up, after its sealing threads were
   * closed, which closed their descriptors): a file is never left verified but unnamed for the
   * next run to sweep when this run can remove it.
   */
  async abandon (): Promise<void> {
    const left = [...this.unsettled]
    this.unsettled.clear()
    this.filling = []
    await Promise.all(left.map(async f => { await rm(f.temp, { force: true }) }))
  }

  private async flush (): Promise<void> {
    const batch = this.filling
    this.filling = []
    this.bytes = 0
    const previous = this.syncing
    this.syncing = previous.then(async () => { await this.commit(batch) })
    await previous
  }

  /** Syncs a batch, then renames each synced file whose directory is still where it was checked. Never throws: each outcome goes to its file's settle. */
  private async commit (batch: ReadonlyArray<{ readonly file: UnsealedFile, readonly settle: Settle }>): Promise<void> {
    if (batch.length === 0) return
    const settle = async (entry: { readonly file: UnsealedFile, readonly settle: Settle }, err: unknown): Promise<void> => {
      if (!this.unsettled.delete(entry.file)) return
      if (err !== undefined) await rm(entry.file.temp, { force: true })
      try {
        entry.settle(err)
      } catch (thrown) {
        this.thrown ??= { err: thrown }
      }
    }
    try {
      const failed = await this.pool.syncUnsealed(batch.map(b => b.file.job))
      const byDir = new Map<string, Array<{ readonly file: UnsealedFile, readonly settle: Settle }>>()
      for (const entry of batch) {
        if (failed.has(entry.file.job)) { await settle(entry, failed.get(entry.file.job)); continue }
        const key = `${entry.file.dir}\0${entry.file.expectedDir}`
        const entries = byDir.get(key) ?? []
        entries.push(entry)
        byDir.set(key, entries)
      }
      for (const entries of byDir.values()) {
        // Each directory opened once, checked to be where it was made; every rename goes through
        // its descriptor (a symlink swapped in since receives nothing, and leads the rename nowhere).
        const { dir, expectedDir } = (entries[0] as { readonly file: UnsealedFile }).file
        const errors = placeFiles(dir, expectedDir, entries.map(({ file }) => ({ temp: file.temp, target: file.target, inode: file.inode, replace: file.replace === true })))
        for (const [i, entry] of entries.entries()) await settle(entry, errors[i])
      }
    } catch (err) {
      for (const entry of batch) await settle(entry, err)
    }
  }
}
