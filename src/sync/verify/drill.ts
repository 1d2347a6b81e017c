import type { Logger } from 'pino'
import { AbortedError, CidsyncError, DrillFailedError, NothingPublishedError, PointerNotFoundError } from '../../errors.js'
import type { Index } from '../../index/index.js'
import { cachedHistory, type HistoryEntry } from '../read/index.js'
import type { SyncStore } from '../state/index.js'
import { verify, type VerifyResult } from './verify.js'
import type { Repository } from '../repository.js'

/** What status shows of restore drills: the last one (null before the first). */
export interface RestorableStatus {
  readonly ok: boolean
  readonly checkedAt: string
  readonly cid: string
  /** What failed (naming the object), or null. */
  readonly failed: string | null
  /** When a drill last found everything restorable. */
  readonly lastSuccessAt: string | null
}

/** A publish as status and the dashboard list it, with where the deal this device asked for its manifest stands. */
export interface HistoryRow extends HistoryEntry { readonly deal: 'made' | 'pending' | 'overdue' | 'none' }

/** What a drill reads with: the repository (its home, passphrase, config and sync store) and this device. */
export interface DrillComponents {
  readonly index: Index
  readonly logger: Logger
  readonly deviceId: string
  readonly repository: Repository
}

/** Runs a restore drill on what the pointer names now and records the result (status, metrics, `cidsync status`). */
export async function runDrill (components: DrillComponents, options: { readonly signal?: AbortSignal } = {}): Promise<VerifyResult> {
  const { signal } = options
  const { repository } = components
  const { config, store } = repository
  let cid: string
  try {
    cid = (await repository.pointers.current(config.namespace, config.network, { signal })).snapshotCid
  } catch (err) {
    if (err instanceof PointerNotFoundError) throw new NothingPublishedError(`nothing is published for ${config.namespace} on ${config.network} yet: a restore drill runs once something is`, { cause: err })
    throw err
  }
  const result = await recordDrill({ store, logger: components.logger }, cid, async () => await verify(components, {
    ...repository.readContext('verify', { signal }), cid, cache: store.manifestCache
  }), signal)
  if (result.restorable) components.logger.info({ cid, segments: result.segments }, 'restore drill: restorable')
  else components.logger.error({ cid, failed: result.failed }, 'restore drill: NOT restorable')
  return result
}

/**
 * Runs a drill of `cid` and records its result for status and metrics (`cidsync verify` and the
 * daemon both). A drill that throws proved nothing restorable: it is recorded as failed, never left
 * showing the last success. An error of ours keeps its code; anything else (a raw SQLite error from
 * a forged manifest) becomes a {@link DrillFailedError} that says what to do. With no store (a
 * fresh device's drill before any restore) nothing is recorded: there is no state to keep it in.
 */
export async function recordDrill (components: { readonly store?: Pick<SyncStore, 'verified'>, readonly logger: Logger }, cid: string, drill: () => Promise<VerifyResult>, signal?: AbortSignal): Promise<VerifyResult> {
  let result: VerifyResult
  try {
    result = await drill()
  } catch (err) {
    // Stopping the daemon is not a drill's result.
    if (signal?.aborted === true || err instanceof AbortedError) throw err
    const failure = err instanceof CidsyncError ? err : new DrillFailedError(cid, err)
    const failed: VerifyResult = { restorable: false, cid, checkedAt: new Date().toISOString(), publishes: 0, segments: 0, own: null, failed: { cid, message: failure.message } }
    components.store?.verified(failed)
    components.logger.error({ cid, err: failure }, 'restore drill failed')
    throw failure
  }
  components.store?.verified(result)
  return result
}

/** What the last drill found not restorable: the publish the pointer named, and the object that failed. */
export interface FailedDrill {
  readonly pointer: string
  /** The manifest or segment that failed; null when this device's rows differed from what a restore installs. */
  readonly object: string | null
  readonly checkedAt: string
}

/** The last drill when it failed (undefined when it passed, or none ran). */
export function failedDrill (store: SyncStore): FailedDrill | undefined {
  const { result } = store.lastVerify()
  if (result === undefined) return undefined
  try {
    const last = JSON.parse(result) as VerifyResult
    if (last.restorable) return undefined
    return { pointer: last.cid, object: last.failed?.cid ?? null, checkedAt: last.checkedAt }
  } catch {
    return undefined
  }
}

/** The last drill, as status shows it. */
export function restorableStatus (store: SyncStore): RestorableStatus | null {
  const { result, lastSuccessAt } = store.lastVerify()
  if (result === undefined) return null
  try {
    const last = JSON.parse(result) as VerifyResult
    const failed = last.failed === null
      ? (last.own !== null && last.own.differing > 0 ? `${last.own.differing} of this device's files differ from what a restore installs (first: ${last.own.first ?? '?'})` : null)
      : `${last.failed.cid}: ${last.failed.message}`
    return { ok: last.restorable, checkedAt: last.checkedAt, cid: last.cid, failed, lastSuccessAt: lastSuccessAt ?? null }
  } catch {
    return null
  }
}

/** The history from the pointer as far as the manifest cache holds it (nothing fetched), newest first. */
export function historyStatus (store: SyncStore, index: Index, limit: number): HistoryRow[] {
  const start = store.remotePointer()?.cid ?? null
  return cachedHistory(store.manifestCache, start, limit).map(entry => ({ ...entry, deal: index.remote.dealState(entry.cid) }))
}
