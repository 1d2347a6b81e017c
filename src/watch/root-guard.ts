import { opendir, stat } from 'node:fs/promises'
import { dirId } from './dir-chain.js'
import { backoffMs } from '../util/backoff.js'

/** How often a watched folder's root is looked at: one stat. */
export const ROOT_CHECK_MS = 2_000
/** A folder that is gone is looked for again after this, then twice as long each time up to {@link ROOT_RETRY_MAX_MS}. */
export const ROOT_RETRY_MS = 250
export const ROOT_RETRY_MAX_MS = 10_000

/** What the root is now, against the one the rows were read from. */
export type RootState =
  | { readonly kind: 'same' }
  | { readonly kind: 'missing', readonly why: string }
  /** Another directory, empty, where files were indexed: an unmounted disk's mount point, most likely. */
  | { readonly kind: 'emptied' }
  /** Back, or another directory with files in it (a remount, a folder moved back): to scan again. */
  | { readonly kind: 'back', readonly id: string }

export interface RootGuardInit {
  readonly path: string
  /** Whether this device holds live rows of the folder (an empty directory then means unmounted). */
  readonly hasRows: () => boolean
  /** Told on every check, never throws; `next` sets when the following check runs. */
  readonly onCheck: (state: RootState) => Promise<void>
  /** The folder's stop: no check is made or told after it. */
  readonly signal?: AbortSignal
}

/**
 * Watches one folder's root itself, which no directory watch reports reliably: removed, moved
 * away, replaced (`rm -rf data; mkdir data`), unmounted (the mount point left behind is another,
 * empty directory: (device, inode, birth time) tell it apart). A periodic stat while all is well; while the
 * folder is away, checks that back off from {@link ROOT_RETRY_MS} to {@link ROOT_RETRY_MAX_MS}.
 */
export class RootGuard {
  /** The (device, inode) of the root the rows were read from. */
  private id: string | undefined
  private timer: NodeJS.Timeout | undefined
  /** Checks in a row that found the folder away. */
  private absences = 0
  private checking = false
  private stopped = false

  constructor (private readonly init: RootGuardInit) {
    init.signal?.addEventListener('abort', () => { this.stop() }, { once: true })
  }

  /** Notes the root as it is now as the one the rows come from; answers why it cannot be used, if so. */
  async pin (): Promise<string | undefined> {
    const state = await this.look()
    if (state.kind === 'missing') return state.why
    if (state.kind === 'back') this.id = state.id
    return undefined
  }

  /** Whether the root is still the directory the rows were read from: a file missing under it is then really gone. */
  async intact (): Promise<boolean> {
    return (await this.look()).kind === 'same'
  }

  /** Whether the root is a directory now (any directory: the drift check's own scan compares it with the rows). */
  async present (): Promise<boolean> {
    return (await stat(this.init.path).catch(() => undefined))?.isDirectory() === true
  }

  /** The next check in `ms` (the steady pace when omitted). */
  schedule (ms = ROOT_CHECK_MS): void {
    if (this.stopped) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => { void this.check() }, ms)
    this.timer.unref()
  }

  /** The next check soon, backing off while the folder stays away. */
  retry (): void {
    this.schedule(backoffMs({ firstMs: ROOT_RETRY_MS, maxMs: ROOT_RETRY_MAX_MS, jitter: 'none' }, ++this.absences))
  }

  /** The folder is back to normal: the next absence is looked for quickly again. */
  settled (): void {
    this.absences = 0
    this.schedule()
  }

  stop (): void {
    this.stopped = true
    clearTimeout(this.timer)
  }

  private async check (): Promise<void> {
    if (this.checking || this.stopped) return
    this.checking = true
    try {
      const state = await this.look()
      if (!this.stopped) await this.init.onCheck(state)
    } catch {
      this.retry()
    } finally {
      this.checking = false
    }
  }

  private async look (): Promise<RootState> {
    const stats = await stat(this.init.path).catch((err: NodeJS.ErrnoException) => err)
    if (stats instanceof Error) return { kind: 'missing', why: stats.code === 'ENOENT' ? 'does not exist' : `cannot be read (${stats.code ?? 'EIO'})` }
    if (!stats.isDirectory()) return { kind: 'missing', why: 'is not a directory' }
    // ext4 hands a removed directory's inode to the next one made: its birth time tells them apart.
    const id = `${dirId(stats)}:${stats.birthtimeMs}`
    if (id === this.id) return { kind: 'same' }
    if (this.id !== undefined && this.init.hasRows() && await isEmpty(this.init.path)) return { kind: 'emptied' }
    return { kind: 'back', id }
  }
}

async function isEmpty (path: string): Promise<boolean> {
  try {
    const dir = await opendir(path, { bufferSize: 1 })
    try {
      return (await dir.read()) === null
    } finally {
      await dir.close()
    }
  } catch {
    return false
  }
}
