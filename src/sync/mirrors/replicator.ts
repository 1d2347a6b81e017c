import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { Config } from '../../config/index.js'
import { cidProfile } from '../../content/index.js'
import { AbortedError, CidsyncError, ContentNotFoundError, IntegrityError, NotReadyError } from '../../errors.js'
import type { Index } from '../../index/index.js'
import type { ObjectHome } from '../../store/index.js'
import { backoffMs } from '../../util/backoff.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { logIndexContent } from './content.js'
import { logHistory } from './history.js'
import { DEFAULT_MIRROR_TIMING, mirrorAdvice, type MirrorLink, type MirrorTiming, type ReplicatorState } from './link.js'
import type { ReplicaRow } from '../state/index.js'
import type { Repository } from '../repository.js'
import { MirrorPointerGuard } from './pointer.js'
import type { SyncEventListener } from '../sync-event.js'

export { DEFAULT_MIRROR_TIMING, mirrorAdvice } from './link.js'
export type { MirrorLink, MirrorPointerNote, MirrorTiming, ReplicatorState } from './link.js'

/** Rows copied per look at the log. */
const BATCH = 32
/** An object the primary no longer gives (gone, or damaged there) is tried this often before it is skipped and counted. */
const UNAVAILABLE_ATTEMPTS = 5
/** Skipped objects are tried again this many pointer looks apart (10 min by default): the primary may give them again. */
const SKIPPED_RETRY_FACTOR = 10

export interface ReplicatorComponents {
  readonly link: MirrorLink
  /** The repository on the primary: objects fetched verified from it, its sync store and passphrase. */
  readonly repository: Repository
  /** The index this device publishes: every content record in it (any device's) is logged for the mirrors. */
  readonly index?: Index
  /** This device's ID: its own records are logged as it stores them, read from the index once only. */
  readonly deviceId?: string
  readonly logger: Logger
  readonly config: () => Config
  readonly timing?: Partial<MirrorTiming>
  /** Told when the loop changes course (the daemon's `/events`, so the dashboard refreshes). */
  readonly onEvent?: SyncEventListener
}

/**
 * One mirror's copy loop: the rows of the replication log after the mirror's cursor, in order,
 * each object fetched verified through the primary's gateways and uploaded to the mirror under
 * the profile it was stored with (the mirror's `add` must compute the same CID, which the upload
 * client checks), then each publish's pointer moved there, never back. Its own loop, its own
 * back-off: a mirror that is down or slow holds nothing of the primary's, and catches up from
 * its cursor (in sync.sqlite) when it answers again, across restarts and kills.
 */
export class MirrorReplicator {
  private readonly timing: MirrorTiming
  private readonly abort = new AbortController()
  private running: Promise<void> | undefined
  private wakeUp: (() => void) | undefined
  private failures = 0
  private copied = 0
  private lastError: ReplicatorState['lastError'] = null
  private retryAt: string | null = null
  private readonly pointer: MirrorPointerGuard
  /** When reading the history behind the last publish may be tried again after it failed (ms). */
  private historyRetryAt = 0
  /** When the objects skipped for this mirror were last tried again (ms). */
  private lastSkippedRetry = Date.now()
  /** The row failing now and how often, to skip one the primary no longer has. */
  private failing: { seq: number, attempts: number } | undefined
  /** Failures of the primary's fetch (not of the mirror), the only ones that may skip an object. */
  private readonly fromPrimary = new WeakSet<Error>()

  constructor (private readonly components: ReplicatorComponents) {
    this.timing = { ...DEFAULT_MIRROR_TIMING, ...components.timing }
    this.pointer = new MirrorPointerGuard({ ...components, signal: this.abort.signal, tell: (what, cid, message) => { this.tell(what, cid, message) } })
  }

  get name (): string {
    return this.components.link.name
  }

  start (): void {
    this.running ??= this.loop().catch((err: unknown) => {
      if (!this.abort.signal.aborted) this.components.logger.error({ err, mirror: this.name }, 'mirror copy loop stopped')
    })
  }

  /** Something was logged: look now, unless the loop is waiting out a failure. */
  wake (): void {
    this.wakeUp?.()
  }

  async stop (): Promise<void> {
    this.abort.abort(new AbortedError('the daemon is stopping'))
    this.wakeUp?.()
    await this.running
  }

  state (): ReplicatorState {
    const skipped = this.components.repository.store.mirrorLog.skipped(this.name)
    const last = skipped.items.at(-1)
    return { copiedTotal: this.copied, lastError: this.lastError, retryAt: this.retryAt, pointer: this.pointer.note, unavailable: { count: skipped.count, last: last === undefined ? null : { cid: last.cid, message: last.message } } }
  }

  private async loop (): Promise<void> {
    const signal = this.abort.signal
    while (!signal.aborted) {
      let worked = false
      try {
        worked = await this.pass()
        if (!worked && Date.now() - this.pointer.lastCheck >= this.timing.pointerCheckMs) await this.pointer.check()
        if (!worked && Date.now() - this.lastSkippedRetry >= this.timing.pointerCheckMs * SKIPPED_RETRY_FACTOR) await this.retrySkipped()
        if (this.lastError !== null) this.tell('recovered', null, null)
        this.failures = 0
        this.lastError = null
        this.retryAt = null
      } catch (err) {
        if (signal.aborted) return
        this.failures++
        const waitMs = err instanceof NotReadyError ? this.timing.firstRetryMs : backoffMs({ firstMs: this.timing.firstRetryMs, maxMs: this.timing.maxRetryMs, jitter: 'spread' }, this.failures)
        this.retryAt = new Date(Date.now() + waitMs).toISOString()
        if (this.lastError === null) this.tell('failing', null, (err as Error).message)
        this.lastError = { at: new Date().toISOString(), message: (err as Error).message, code: err instanceof CidsyncError ? err.code : null, advice: mirrorAdvice(err, this.name) }
        this.components.logger.warn({ mirror: this.name, err: (err as Error).message, retryInMs: waitMs }, 'mirror: copy failed; tried again later')
        // A failure waits its time out: a wake (a new publish) does not hammer a mirror that is down.
        await this.pause(waitMs, false)
        continue
      }
      if (!worked) await this.pause(this.timing.idleMs, true)
    }
  }

  private async pause (ms: number, wakeable: boolean): Promise<void> {
    const signal = this.abort.signal
    if (signal.aborted) return
    await new Promise<void>(resolve => {
      // The listener goes with each wait: a loop that waits every few seconds for months must not pile them up.
      const done = (): void => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        if (this.wakeUp === done || this.wakeUp === onlyStop) this.wakeUp = undefined
        resolve()
      }
      const onlyStop = (): void => { if (signal.aborted) done() }
      const timer = setTimeout(done, ms)
      this.wakeUp = wakeable ? done : onlyStop
      signal.addEventListener('abort', done, { once: true })
    })
  }

  /** Copies the next rows; answers whether there were any. */
  private async pass (): Promise<boolean> {
    const { repository, link } = this.components
    const log = repository.store.mirrorLog
    // Content another device stored (or stored before the log was kept) comes in through the index.
    if (this.components.index !== undefined) logIndexContent(this.components.index, log, this.components.deviceId)
    await this.logHistory()
    const rows = log.after(log.mirror(link.name).cursor, BATCH)
    if (rows.length === 0) return false
    const primary = this.components.repository.home
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as ReplicaRow
      this.abort.signal.throwIfAborted()
      if (row.kind === 'delete') {
        // A prune's deletes, as many in a row as the batch holds: one call, one walk of a listing.
        let last = i
        while (rows[last + 1]?.kind === 'delete') last++
        const deletes = rows.slice(i, last + 1)
        const cids = deletes.map(r => r.cid)
        // Only copies made before the prune deleted them: one made since is another device's,
        // stored again after the prune, and its publish names it.
        const storedBefore = Math.min(...deletes.map(r => r.addedAt))
        const { refused } = await link.clients.objects.deleteMany(cids, { signal: this.abort.signal, storedBefore })
        // One the mirror will not delete (a plan that keeps uploads) stays there: said, never a wedge.
        if (refused.length > 0) this.components.logger.warn({ mirror: this.name, refused: refused.length, cids: refused.slice(0, 5).map(r => r.cid), reason: refused[0]?.reason }, 'mirror: refused to delete objects a prune deleted on the primary; they stay on the mirror')
        // A deleted object skipped before (the primary no longer gave it) is not missing any more.
        for (const cid of cids) log.unskip(link.name, cid)
        log.advance(link.name, (rows[last] as ReplicaRow).seq)
        i = last
      } else if (row.kind === 'object') {
        // A prune deleted it since, so the primary no longer gives it, and no kept publish needs it.
        if (!log.deletedAfter(row.cid, row.seq)) await this.copyOrSkip(row, primary)
        log.advance(link.name, row.seq)
      } else if (log.pointerAfter(row.seq)) {
        // A later publish moves the pointer past this one: its objects are copied all the same.
        log.advance(link.name, row.seq)
      } else {
        await this.pointer.move(row)
      }
    }
    return true
  }

  private async copyOrSkip (row: ReplicaRow, primary: ObjectHome): Promise<void> {
    try {
      await this.copy(row, primary)
      this.failing = undefined
      this.copied++
    } catch (err) {
      // Only what the primary's gateways would not give is skipped: the mirror's own refusal (an
      // add that answers another CID) is the mirror's fault, retried and shown, never dropped.
      if (!(err instanceof ContentNotFoundError || err instanceof IntegrityError) || !this.fromPrimary.has(err) || this.abort.signal.aborted) throw err
      const attempts = this.failing?.seq === row.seq ? this.failing.attempts + 1 : 1
      this.failing = { seq: row.seq, attempts }
      if (attempts < UNAVAILABLE_ATTEMPTS) throw err
      // The primary no longer gives it: the mirror cannot get it from here; the rest goes on, counted.
      this.components.repository.store.mirrorLog.noteSkipped(this.name, row, (err as Error).message)
      this.components.logger.error({ mirror: this.name, cid: row.cid, err: (err as Error).message }, 'mirror: an object the primary no longer gives was skipped')
      this.failing = undefined
    }
  }

  /** Every publish behind the last one logged (another device's too), once per new publish; a failure waits, never wedges the copy. */
  private async logHistory (): Promise<void> {
    if (Date.now() < this.historyRetryAt) return
    try {
      await logHistory(this.components.repository, this.abort.signal)
    } catch (err) {
      if (this.abort.signal.aborted) throw err
      this.historyRetryAt = Date.now() + this.timing.pointerCheckMs * SKIPPED_RETRY_FACTOR
      this.components.logger.warn({ mirror: this.name, err: (err as Error).message }, 'mirror: the history behind the last publish could not be read; tried again later')
    }
  }

  /** The objects skipped for this mirror, tried again: one the primary gives now is copied and no longer missing. */
  private async retrySkipped (): Promise<void> {
    this.lastSkippedRetry = Date.now()
    const log = this.components.repository.store.mirrorLog
    const primary = this.components.repository.home
    for (const item of log.skipped(this.name).items.slice(0, BATCH)) {
      this.abort.signal.throwIfAborted()
      try {
        await this.copy({ ...item, seq: 0 }, primary)
      } catch (err) {
        if (err instanceof ContentNotFoundError || err instanceof IntegrityError) continue
        throw err
      }
      log.unskip(this.name, item.cid)
      this.copied++
      this.components.logger.info({ mirror: this.name, cid: item.cid }, 'mirror: an object skipped before was copied')
    }
  }

  private async copy (row: Pick<ReplicaRow, 'seq' | 'cid' | 'profile'>, primary: ObjectHome): Promise<void> {
    const { link, config } = this.components
    const signal = this.abort.signal
    const profile = cidProfile(row.profile)
    const dir = join(config().stateDir, 'snapshots')
    makeDirsSync(dir, 0o700)
    const temp = join(dir, `mirror-${row.seq}-${link.name.replace(/[^A-Za-z0-9.-]/g, '-')}`)
    try {
      try {
        await primary.objects.getFile(row.cid, profile, temp, { signal })
      } catch (err) {
        if (err instanceof Error) this.fromPrimary.add(err)
        throw err
      }
      await link.clients.objects.put(temp, profile, { signal })
    } finally {
      await rm(temp, { force: true })
    }
    if (link.deal && config().snapshot.deal) await link.clients.deals?.addCid(row.cid, { signal })
  }

  private tell (what: 'published' | 'failing' | 'recovered' | 'pointer', cid: string | null, message: string | null): void {
    try {
      this.components.onEvent?.({ type: 'mirror', mirror: this.name, what, cid, message })
    } catch { /* a listener's failure is not the copy's */ }
  }
}
