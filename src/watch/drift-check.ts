import type { Logger } from 'pino'

/** What the check needs of a folder (a FolderIndexer). */
export interface DriftFolder {
  readonly name: string
  /** Differences found and queued for repair; undefined when the folder was not checked (not watched, root missing). */
  checkDrift (): Promise<number | undefined>
  /** Resolves once what was queued is hashed and written. */
  idle (): Promise<void>
}

/** One run's result, as `POST /rescan` answers it. */
export interface DriftResult {
  readonly at: string
  readonly ms: number
  readonly repaired: number
  /** Per folder: the differences repaired, or null when it was not checked (and why it is in status). */
  readonly folders: ReadonlyArray<{ readonly name: string, readonly repaired: number | null }>
}

/** The check as /status shows it. */
export interface DriftStatus {
  readonly running: boolean
  readonly runs: number
  readonly lastRunAt: string | null
  readonly lastRepaired: number | null
  readonly totalRepaired: number
  /** Folders the last run could not check (not watched, or their root missing). */
  readonly lastUnchecked: readonly string[]
  readonly nextRunAt: string | null
  readonly lastError: string | null
}

export interface DriftCheckInit {
  readonly folders: () => readonly DriftFolder[]
  /** Between periodic runs; 0 turns them off (a run on request still works). */
  readonly intervalMs: number
  readonly logger: Logger
  /** Commits the repairs queued (so a run's answer is already in the index). */
  readonly written?: () => Promise<void>
}

/**
 * The reconciliation ("drift") check: now and then, and on request, each watched folder is
 * scanned afresh and compared with its rows, so a missed event can never leave the index wrong
 * for long. Folders are checked one at a time (one scan thread), a run at a time.
 */
export class DriftCheck {
  private running: Promise<DriftResult> | undefined
  private timer: NodeJS.Timeout | undefined
  private nextRunAt: number | undefined
  private runs = 0
  private lastRunAt: number | undefined
  private lastRepaired: number | undefined
  private totalRepaired = 0
  private lastUnchecked: string[] = []
  private lastError: string | undefined
  private stopped = false

  constructor (private readonly init: DriftCheckInit) {}

  /** Arms the periodic runs (once the folders are watched). */
  start (): void {
    this.schedule()
  }

  /** Runs the check now, or joins the one running. Never rejects: a failure is in the result's status. */
  async run (reason: 'schedule' | 'request'): Promise<DriftResult> {
    this.running ??= this.runOnce(reason).finally(() => {
      this.running = undefined
      this.schedule()
    })
    return await this.running
  }

  status (): DriftStatus {
    return {
      running: this.running !== undefined,
      runs: this.runs,
      lastRunAt: this.lastRunAt === undefined ? null : new Date(this.lastRunAt).toISOString(),
      lastRepaired: this.lastRepaired ?? null,
      totalRepaired: this.totalRepaired,
      lastUnchecked: this.lastUnchecked,
      nextRunAt: this.nextRunAt === undefined ? null : new Date(this.nextRunAt).toISOString(),
      lastError: this.lastError ?? null
    }
  }

  stop (): void {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
    this.nextRunAt = undefined
  }

  private schedule (): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.nextRunAt = undefined
    if (this.stopped || this.init.intervalMs <= 0) return
    this.nextRunAt = Date.now() + this.init.intervalMs
    this.timer = setTimeout(() => { void this.run('schedule') }, this.init.intervalMs)
    this.timer.unref()
  }

  private async runOnce (reason: 'schedule' | 'request'): Promise<DriftResult> {
    const started = Date.now()
    const folders: Array<{ name: string, repaired: number | null }> = []
    this.lastError = undefined
    for (const folder of this.init.folders()) {
      if (this.stopped) break
      try {
        const repaired = await folder.checkDrift()
        if (repaired !== undefined && repaired > 0) await folder.idle()
        folders.push({ name: folder.name, repaired: repaired ?? null })
      } catch (err) {
        folders.push({ name: folder.name, repaired: null })
        this.lastError = `folder "${folder.name}": ${(err as Error).message}`
        this.init.logger.error({ folder: folder.name, err }, 'the drift check of a folder failed; the next run tries again')
      }
    }
    const repaired = folders.reduce((n, f) => n + (f.repaired ?? 0), 0)
    if (repaired > 0) await this.init.written?.()
    this.runs++
    this.lastRunAt = Date.now()
    this.lastRepaired = repaired
    this.totalRepaired += repaired
    this.lastUnchecked = folders.filter(f => f.repaired === null).map(f => f.name)
    const ms = Date.now() - started
    const fields = { reason, repaired, unchecked: this.lastUnchecked, ms }
    // A repair means an event was missed: worth a warning, so it is seen and can be reported.
    if (repaired > 0) this.init.logger.warn({ ...fields, folders: folders.filter(f => (f.repaired ?? 0) > 0) }, 'index drift repaired')
    else this.init.logger.info(fields, 'index drift check: nothing to repair')
    return { at: new Date(this.lastRunAt).toISOString(), ms, repaired, folders }
  }
}
