import { Histogram, type HistogramSnapshot } from '../util/histogram.js'
import type { Reconciled } from './reconcile.js'
import type { Refusal, RestoreRecord, SyncStore } from './state/index.js'

/** What /status shows of reconciliation. */
export interface ReconcileStatus {
  readonly running: boolean
  readonly lastRun: string | null
  readonly last: Reconciled | null
  /** `code`: the error's stable code (`ERR_REMOTE_NETWORK`: the service could not be reached). */
  readonly lastError: { readonly at: string, readonly message: string, readonly code: string | null } | null
  readonly remoteFiles: number
  readonly gone: number
  readonly deals: { readonly pending: number, readonly overdue: number, readonly made: number }
  readonly durationsSeconds: HistogramSnapshot
}

/** What /status shows of publishing. */
export interface PublishStatus {
  readonly running: boolean
  /** `root`: its plain root, which links its whole history (null: none was uploaded). */
  readonly last: { readonly cid: string, readonly at: string | null, readonly entries: number, readonly root: string | null } | null
  /** When the next publish is due after recent changes (debounced), if one is. */
  readonly pendingAt: string | null
  /** `code`: the error's stable code (`ERR_REMOTE_NETWORK`: the service could not be reached). */
  readonly lastError: { readonly at: string, readonly message: string, readonly code: string | null } | null
  readonly runs: number
  readonly failures: number
  /**
   * The pointer as last seen: its CID, whether it is this device's last snapshot, and if not, why.
   * `setBack`: it holds the publish last found set back (`rolledBack`), until a publish heals it.
   */
  readonly pointer: { readonly cid: string | null, readonly at: string | null, readonly inSync: boolean, readonly why: string | null, readonly setBack: boolean }
  /** Why publishing and reconciling are stopped (a refused or expired credential), until it changes. */
  readonly blocked: string | null
  /** A publish held because it would drop many of this device's entries, until confirmed or they come back. */
  readonly held: { readonly since: string, readonly dropping: number, readonly of: number, readonly message: string } | null
  /** After a failed publish, when it is tried again (the wait doubles with each failure in a row). */
  readonly retryAt: string | null
  /** The pointer names a snapshot that cannot be used here: what, and the fix (`cidsync pointer repair`). */
  readonly pointerProblem: string | null
  /** What the last merge refused of the pointer's publish (`ERR_SEQUENCE_IMPLAUSIBLE`: a forged device list), until a merge refuses nothing. */
  readonly refused: Refusal | null
  /** The last time the pointer was found set back (lacking this device's last publish): when, and what was done. */
  readonly rolledBack: Refusal | null
  readonly durationsSeconds: HistogramSnapshot
  /**
   * The IPNS name snapshots are published to (`[snapshot] ipns_key`; null when none is set): the
   * key's name, its id (`/ipns/ID`, null until known) and the CID it was last bound to, and when.
   */
  readonly ipns: { readonly key: string, readonly name: string | null, readonly id: string | null, readonly cid: string | null, readonly at: string | null } | null
  /** Restores into this state dir (run by `cidsync restore`, recorded in sync.sqlite). */
  readonly restores: { readonly count: number, readonly last: string | null, readonly durationsSeconds: HistogramSnapshot }
}

/** What the runner knows of publishing beyond sync.sqlite: its counters and the state of its schedule. */
export interface PublishRunState {
  readonly running: boolean
  readonly pendingAt: number | undefined
  readonly retryAt: number | undefined
  readonly lastError: PublishStatus['lastError']
  readonly runs: number
  readonly failures: number
  readonly blocked: string | null
  readonly held: PublishStatus['held']
  readonly pointerProblem: string | null
  readonly durationsSeconds: HistogramSnapshot
  /** `[snapshot] ipns_key` as configured: a key's name, `auto`, or '' for none. */
  readonly ipnsKey: string
}

/** The name in use: the configured key (or auto's, once made), with what was last published to it. */
function ipnsStatus (store: SyncStore, configured: string): PublishStatus['ipns'] {
  if (configured === '') return null
  const name = configured === 'auto' ? store.ipnsKey()?.name ?? null : configured
  const last = store.ipnsPublished()
  const published = last !== undefined && last.name === name ? last : undefined
  const id = published?.id ?? (configured === 'auto' ? store.ipnsKey()?.id ?? null : null)
  return { key: configured, name, id, cid: published?.cid ?? null, at: published?.at ?? null }
}

function restoreHistory (history: readonly RestoreRecord[]): PublishStatus['restores'] {
  const histogram = new Histogram()
  for (const restore of history) histogram.observe(restore.seconds)
  return { count: history.length, last: history.at(-1)?.at ?? null, durationsSeconds: histogram.snapshot() }
}

const iso = (ms: number | undefined): string | null => ms === undefined ? null : new Date(ms).toISOString()

/**
 * /status's `publish`: what sync.sqlite records (last publish, the pointer as last seen, restores)
 * with the runner's state, and whether the pointer holds this device's last snapshot (if not, why).
 */
export function publishStatus (store: SyncStore, changeMarker: string, run: PublishRunState): PublishStatus {
  const last = store.lastPublished()
  const seen = store.remotePointer()
  const remote = seen?.cid
  const unpublished = run.pendingAt !== undefined || (last !== undefined && last.marker !== changeMarker)
  const rolledBack = store.rollback()
  const setBack = remote !== undefined && remote !== '' && rolledBack?.pointer === remote
  const why = run.pointerProblem ??
    (remote === undefined ? 'not looked at yet (reconciliation reads it)'
      : remote === '' ? 'nothing is stored for this namespace and network yet'
        : setBack ? `it holds ${remote}, an older publish than this device's last known one: the service set it back [ERR_POINTER_ROLLED_BACK]; this device publishes on top of it`
          : remote !== store.base() ? `it holds ${remote}, which another device published and this one has not merged yet (the next publish does)`
            : unpublished ? `changes here are waiting to be published${run.pendingAt === undefined ? '' : ` (at ${new Date(run.pendingAt).toISOString()})`}`
              : null)
  return {
    pointer: { cid: remote === undefined || remote === '' ? null : remote, at: seen?.at ?? null, inSync: why === null, why, setBack },
    running: run.running,
    last: last === undefined ? null : { cid: last.cid, at: last.at, entries: last.entries, root: store.plainRoots.root(last.cid) ?? null },
    pendingAt: iso(run.pendingAt),
    lastError: run.lastError,
    runs: run.runs,
    failures: run.failures,
    blocked: run.blocked,
    held: run.held,
    retryAt: iso(run.retryAt),
    pointerProblem: run.pointerProblem,
    refused: store.refused(),
    rolledBack,
    durationsSeconds: run.durationsSeconds,
    ipns: ipnsStatus(store, run.ipnsKey),
    restores: restoreHistory(store.restores())
  }
}
