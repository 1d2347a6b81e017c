import type { EntryChange, EntryStore } from '../index/index.js'

export const DEFAULT_FLUSH_MS = 250
export const DEFAULT_MAX_BATCH = 5_000

export interface ChangeWriterInit {
  readonly flushMs?: number
  readonly maxBatch?: number
  /** Told after each flush how many rows changed, and of any write that failed. */
  readonly onFlush?: (written: number, error?: Error) => void
}

/**
 * Gathers index writes and commits them in one transaction per batch: a burst of 100,000 files
 * is a few dozen commits, not 100,000. Within a batch a later change to a path replaces an earlier one.
 */
export class ChangeWriter {
  private batch = new Map<string, EntryChange>()
  private timer: NodeJS.Timeout | undefined
  private readonly flushMs: number
  private readonly maxBatch: number

  constructor (private readonly entries: EntryStore, private readonly deviceId: string, private readonly init: ChangeWriterInit = {}) {
    this.flushMs = init.flushMs ?? DEFAULT_FLUSH_MS
    this.maxBatch = init.maxBatch ?? DEFAULT_MAX_BATCH
  }

  get pending (): number {
    return this.batch.size
  }

  write (change: EntryChange): void {
    this.batch.set(`${change.folder}\0${change.path}`, change)
    if (this.batch.size >= this.maxBatch) this.flush()
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs)
  }

  /** Commits what is gathered now. Answers the rows changed. */
  flush (): number {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.batch.size === 0) return 0
    const changes = [...this.batch.values()]
    this.batch = new Map()
    try {
      const written = this.entries.apply(this.deviceId, changes)
      this.init.onFlush?.(written)
      return written
    } catch (err) {
      this.init.onFlush?.(0, err as Error)
      throw err
    }
  }
}
