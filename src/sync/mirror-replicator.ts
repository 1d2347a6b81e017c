import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import { cidProfile } from '../content/index.js'
import { AbortedError, CidsyncError, ContentNotFoundError, IntegrityError, MirrorPointerAheadError, MirrorPointerRolledBackError, NotReadyError, PointerNotFoundError } from '../errors.js'
import type { ServiceClients } from '../remote/index.js'
import { ENGINE } from '../snapshot/index.js'
import { backoffMs } from '../util/backoff.js'
import { cachedHistory } from './history.js'
import type { ReplicaRow } from './mirror-log.js'
import type { SyncStore } from './sync-store.js'
import type { SyncEventListener } from './sync-event.js'
import { makeDirsSync } from '../util/make-dirs.js'

/** A configured mirror as the sync room sees it: its name, clients and what is asked of it. */
export interface MirrorLink {
  readonly name: string
  readonly clients: ServiceClients
  /** Ask its deal service for a deal of each object. */
  readonly deal: boolean
  readonly maxLagSeconds: number
  /** Base URL, for status. */
  readonly describe: string
}

/** How often a mirror's loop looks at the log and at the mirror's pointer, and how it backs off. */
export interface MirrorTiming {
  /** Between looks at the log when nothing waits (a local read). */
  readonly idleMs: number
  /** Between looks at the mirror's pointer when nothing waits (one GET). */
  readonly pointerCheckMs: number
  readonly firstRetryMs: number
  readonly maxRetryMs: number
}

export const DEFAULT_MIRROR_TIMING: MirrorTiming = { idleMs: 2_000, pointerCheckMs: 60_000, firstRetryMs: 2_000, maxRetryMs: 5 * 60_000 }

/** Rows copied per look at the log. */
const BATCH = 32
/** An object the primary no longer gives (gone, or damaged there) is tried this often before it is skipped and counted. */
const UNAVAILABLE_ATTEMPTS = 5
/** Publishes looked back through to tell an older pointer from one ahead. */
const HISTORY_LOOKBACK = 10_000

export interface ReplicatorComponents {
  readonly link: MirrorLink
  /** The primary's clients once reached (objects are fetched verified through its gateways). */
  readonly primary: () => ServiceClients | undefined
  readonly store: SyncStore
  readonly logger: Logger
  readonly config: () => Config
  readonly timing?: Partial<MirrorTiming>
  /** Told when the loop changes course (the daemon's `/events`, so the dashboard refreshes). */
  readonly onEvent?: SyncEventListener
}

/** A problem with a mirror's pointer, as status shows it. */
export interface MirrorPointerNote {
  readonly state: 'ahead' | 'rolled-back'
  readonly at: string
  /** What the mirror's pointer held when seen. */
  readonly seen: string
  readonly code: string
  readonly message: string
}

/** What one mirror's loop is doing, for status. */
export interface ReplicatorState {
  readonly copiedTotal: number
  readonly lastError: { readonly at: string, readonly message: string, readonly code: string | null, readonly advice: string } | null
  readonly retryAt: string | null
  readonly pointer: MirrorPointerNote | null
  /** Objects the primary would not give (gone or damaged there): skipped, so the rest goes on. */
  readonly unavailable: { readonly count: number, readonly last: { readonly cid: string, readonly message: string } | null }
}

/** What to do about a failure to copy to a mirror, by what failed. */
export function mirrorAdvice (err: unknown, name: string): string {
  const code = err instanceof CidsyncError ? err.code : ''
  if (code === 'ERR_REMOTE_UNAUTHORIZED' || code === 'ERR_MIRROR_CREDENTIAL_UNBOUND') return `sign in to the mirror: \`cidsync login --mirror ${name}\` (docs/mirrors.md)`
  if (code === 'ERR_REMOTE_NETWORK') return `the mirror does not answer: check that it runs and its URLs in [[mirrors]] ${name}; copying resumes by itself, nothing is lost meanwhile`
  if (code === 'ERR_INTEGRITY') return 'the mirror computed another CID for the same bytes: it imports with other parameters; use a Kubo-compatible service'
  if (code === 'ERR_GATEWAY_FETCH' || code === 'ERR_CONTENT_NOT_FOUND') return 'the primary\'s gateways did not give the object: check [service] gateways; copying resumes by itself'
  return 'copying resumes by itself; if it keeps failing, check the mirror (`cidsync verify --mirror ' + name + '`)'
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
  private pointerNote: MirrorPointerNote | null = null
  private lastPointerCheck = 0
  private unavailable: { count: number, last: { cid: string, message: string } | null } = { count: 0, last: null }
  /** The row failing now and how often, to skip one the primary no longer has. */
  private failing: { seq: number, attempts: number } | undefined
  /** Failures of the primary's fetch (not of the mirror), the only ones that may skip an object. */
  private readonly fromPrimary = new WeakSet<Error>()

  constructor (private readonly components: ReplicatorComponents) {
    this.timing = { ...DEFAULT_MIRROR_TIMING, ...components.timing }
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
    return { copiedTotal: this.copied, lastError: this.lastError, retryAt: this.retryAt, pointer: this.pointerNote, unavailable: { ...this.unavailable } }
  }

  private async loop (): Promise<void> {
    const signal = this.abort.signal
    while (!signal.aborted) {
      let worked = false
      try {
        worked = await this.pass()
        if (!worked && Date.now() - this.lastPointerCheck >= this.timing.pointerCheckMs) await this.checkPointer()
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
    const { store, link } = this.components
    const log = store.mirrorLog
    const rows = log.after(log.mirror(link.name).cursor, BATCH)
    if (rows.length === 0) return false
    const primary = this.components.primary()
    if (primary === undefined) throw new NotReadyError('not ready: copying to the mirror waits for the primary service to be reached', 5)
    for (const row of rows) {
      this.abort.signal.throwIfAborted()
      if (row.kind === 'object') {
        await this.copyOrSkip(row, primary)
        log.advance(link.name, row.seq)
      } else if (log.pointerAfter(row.seq)) {
        // A later publish moves the pointer past this one: its objects are copied all the same.
        log.advance(link.name, row.seq)
      } else {
        await this.movePointer(row)
      }
    }
    return true
  }

  private async copyOrSkip (row: ReplicaRow, primary: ServiceClients): Promise<void> {
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
      this.unavailable = { count: this.unavailable.count + 1, last: { cid: row.cid, message: (err as Error).message } }
      this.components.logger.error({ mirror: this.name, cid: row.cid, err: (err as Error).message }, 'mirror: an object the primary no longer gives was skipped')
      this.failing = undefined
    }
  }

  private async copy (row: ReplicaRow, primary: ServiceClients): Promise<void> {
    const { link, config } = this.components
    const signal = this.abort.signal
    const profile = cidProfile(row.profile)
    const dir = join(config().stateDir, 'snapshots')
    makeDirsSync(dir, 0o700)
    const temp = join(dir, `mirror-${row.seq}-${link.name.replace(/[^A-Za-z0-9.-]/g, '-')}`)
    try {
      try {
        await primary.gateway.fetchVerified(row.cid, profile, temp, { signal })
      } catch (err) {
        if (err instanceof Error) this.fromPrimary.add(err)
        throw err
      }
      await link.clients.upload.add(temp, profile, { signal })
    } finally {
      await rm(temp, { force: true })
    }
    if (link.deal && config().snapshot.deal) await link.clients.deals.addCid(row.cid, { signal })
  }

  /** The mirror's pointer now, or undefined when it holds none. */
  private async mirrorPointer (): Promise<string | undefined> {
    const { namespace, network } = this.components.config()
    try {
      return (await this.components.link.clients.pointers.current(namespace, network, { signal: this.abort.signal })).snapshotCid
    } catch (err) {
      if (err instanceof PointerNotFoundError) return undefined
      throw err
    }
  }

  /** The primary's pointer now (undefined when it holds none or cannot be read: then nothing is excused by it). */
  private async primaryPointer (): Promise<string | undefined> {
    const { namespace, network } = this.components.config()
    try {
      return (await this.components.primary()?.pointers.current(namespace, network, { signal: this.abort.signal }))?.snapshotCid
    } catch {
      return undefined
    }
  }

  /** The publishes before `cid` this device knows (its manifest cache), `cid` itself left out. */
  private olderThan (cid: string): Set<string> {
    return new Set(cachedHistory(this.components.store.manifestCache, cid, HISTORY_LOOKBACK).slice(1).map(e => e.cid))
  }

  private async movePointer (row: ReplicaRow): Promise<void> {
    const { store, link, logger } = this.components
    const current = await this.mirrorPointer()
    const ours = store.mirrorLog.mirror(link.name).published?.cid
    if (current === row.cid) {
      this.pointerNote = null
      store.mirrorLog.notePublished(link.name, row.cid, row.seq)
      return
    }
    if (current !== undefined && current !== ours && !this.olderThan(row.cid).has(current)) {
      // The primary's pointer is there already (another device published past this one): followed, not a problem.
      if (current === store.remotePointer()?.cid || current === await this.primaryPointer()) this.pointerNote = null
      else this.noteAhead(current, row.cid)
      // Its objects are there; the pointer is left as it is, and looked at again later.
      store.mirrorLog.advance(link.name, row.seq)
      return
    }
    // Set back: it holds less than this device put there (nothing, or a publish before ours).
    if (ours !== undefined && current !== ours && (current === undefined || this.olderThan(ours).has(current))) this.noteRolledBack(current ?? '', ours)
    else this.pointerNote = null
    await this.put(row.cid)
    store.mirrorLog.notePublished(link.name, row.cid, row.seq)
    this.lastPointerCheck = Date.now()
    logger.info({ mirror: link.name, cid: row.cid }, 'mirror: pointer moved')
    this.tell('published', row.cid, null)
  }

  private tell (what: 'published' | 'failing' | 'recovered' | 'pointer', cid: string | null, message: string | null): void {
    try {
      this.components.onEvent?.({ type: 'mirror', mirror: this.name, what, cid, message })
    } catch { /* a listener's failure is not the copy's */ }
  }

  /** Nothing to copy: the mirror's pointer should still be the last one put there. */
  private async checkPointer (): Promise<void> {
    const { store, link } = this.components
    this.lastPointerCheck = Date.now()
    const ours = store.mirrorLog.mirror(link.name).published?.cid
    if (ours === undefined) return
    const current = await this.mirrorPointer()
    if (current === ours) {
      if (this.pointerNote?.state === 'ahead') this.pointerNote = null
      return
    }
    if (current !== undefined && !this.olderThan(ours).has(current)) {
      // Another device moving the pointer past ours, to what the primary's pointer holds too, is no problem.
      if (current === store.remotePointer()?.cid || current === await this.primaryPointer()) {
        if (this.pointerNote?.state === 'ahead') this.pointerNote = null
        return
      }
      this.noteAhead(current, ours)
      return
    }
    this.noteRolledBack(current ?? '', ours)
    await this.put(ours)
  }

  private async put (cid: string): Promise<void> {
    const { namespace, network } = this.components.config()
    const entries = cachedHistory(this.components.store.manifestCache, cid, 1)[0]?.entries
    await this.components.link.clients.pointers.put({ snapshotCid: cid, engine: ENGINE, namespace, network, ...(entries === undefined ? {} : { memories: entries }) }, { signal: this.abort.signal })
  }

  private noteAhead (seen: string, ours: string): void {
    const err = new MirrorPointerAheadError(`mirror ${this.name}'s pointer holds ${seen}, which is not among this device's publishes before ${ours}: another device wrote it, or it is forged. It is left as it is; \`cidsync verify --mirror ${this.name}\` tells whether it restores`)
    if (this.pointerNote?.seen !== seen) {
      this.components.logger.warn({ mirror: this.name, seen, ours }, 'mirror: pointer ahead of this device\'s; not overwritten')
      this.tell('pointer', seen, err.message)
    }
    this.pointerNote = { state: 'ahead', at: new Date().toISOString(), seen, code: err.code, message: err.message }
  }

  private noteRolledBack (seen: string, ours: string): void {
    const err = new MirrorPointerRolledBackError(`mirror ${this.name}'s pointer went back to ${seen === '' ? 'nothing' : seen} from ${ours}, which this device put there: it was moved forward again`)
    this.components.logger.warn({ mirror: this.name, seen, ours }, 'mirror: pointer rolled back; moved forward again')
    this.tell('pointer', seen, err.message)
    this.pointerNote = { state: 'rolled-back', at: new Date().toISOString(), seen, code: err.code, message: err.message }
  }
}
