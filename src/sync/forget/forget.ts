import { ForgetContendedError } from '../../errors.js'
import type { RetentionPolicy } from '../../retention/index.js'
import { ENGINE, MAX_REPLACED, type Manifest } from '../../snapshot/index.js'
import { failpoint } from '../../util/failpoint.js'
import type { ProgressOptions } from '../../util/progress.js'
import { checkOwnPublishHeld, contended } from '../prune/index.js'
import { removeDeadRunFiles } from '../state/index.js'
import type { ForgetProgress } from './forget-progress.js'
import { isUnusable, SNAPSHOT_PROFILE, walkHistory } from '../read/index.js'
import type { Repository } from '../repository.js'
import { marksChanged, planForget, type ForgetPlan } from './forget-plan.js'
import { relinkChain } from './rewrite-chain.js'

export type { ForgetProgress } from './forget-progress.js'

export interface ForgetInit extends ProgressOptions<ForgetProgress> {
  readonly policy: RetentionPolicy
  readonly now: Date
  readonly timeZone: string
  /** Plan only: nothing is uploaded and the pointer is not moved. */
  readonly dryRun?: boolean
  /** Labels to take off every publish carrying them (`cidsync forget --unmark`), before the policy. */
  readonly unmark?: readonly string[]
}

/** What a forget did: its plan, and the chain's new head (null when nothing moved). */
export interface Forgotten extends ForgetPlan {
  readonly head: string | null
  /** Kept publishes sealed again with a new link (their CIDs changed). */
  readonly relinked: number
}

/**
 * Applies the retention policy to the pointer's chain (docs/retention.md, "Forget"). The kept
 * publishes are linked anew, each to the kept one before it, and the pointer moves to the new
 * head. Forgotten publishes leave the history; their objects stay until a prune. The pointer has
 * no compare-and-swap: it is read again just before the move, and a publish made meanwhile stops
 * the forget ({@link ForgetContendedError}); the next run plans again on top of it.
 */
export async function forget (repository: Repository, init: ForgetInit): Promise<Forgotten> {
  await removeDeadRunFiles(repository.config.stateDir)
  const plan = await planForget(repository, init)
  // A history set back behind this device's own publish would lose that publish, and a prune after
  // it what it names. Checked on the pointer the plan read: a set-back after another read is never missed.
  await checkOwnPublishHeld(repository, 'forget', init.signal, plan.pointer)
  init.onProgress?.({ type: 'forget:planned', detail: { kept: plan.kept, forgotten: plan.forgotten } })
  if (init.dryRun === true) return { ...plan, head: null, relinked: wouldRelink(plan) }
  if (plan.forgotten === 0 && plan.unmarked === 0) return noteForgotten(repository, init.now, { ...plan, head: null, relinked: 0 })
  failpoint('forget:planned')
  const kept = plan.decisions.filter(d => d.keep).map(d => d.publish)
  // A kill after each new manifest's upload, in the crash tests: each is an object nothing names yet.
  const onProgress = (event: ForgetProgress): void => { init.onProgress?.(event); if (event.type === 'forget:relinked') failpoint('forget:relink') }
  const relinked = await relinkChain(repository, kept, replacedChains(plan, init.now), { signal: init.signal, onProgress })
  const head = relinked.at(-1)?.cid as string
  const { config } = repository
  const deals = repository.deals
  if (config.snapshot.deal && deals !== undefined) {
    // Asked before the pointer moves, as a publish asks for its manifest's: a failure leaves the
    // old chain in place, and a rerun asks again.
    for (const r of relinked) if (r.cid !== r.was) await deals.addCid(r.cid, { signal: init.signal })
  }
  failpoint('forget:relinked')
  const { namespace, network } = config
  const before = await repository.pointers.current(namespace, network, { signal: init.signal })
  if (before.snapshotCid !== plan.pointer) throw contended('forget', before.snapshotCid, plan.pointer)
  failpoint('forget:checked')
  await repository.pointers.put({ snapshotCid: head, engine: ENGINE, namespace, network, memories: before.memories }, { signal: init.signal })
  const after = await repository.pointers.current(namespace, network, { signal: init.signal })
  if (after.snapshotCid !== head && !(await builtOn(repository, after.snapshotCid, head, init.signal))) throw contended('forget', after.snapshotCid, head)
  failpoint('forget:pointer')
  repository.store.relinked(plan.pointer, head)
  failpoint('forget:recorded')
  // The mirrors follow: the new manifests first (their segments are there already), then the pointer.
  const fresh = relinked.filter(r => r.cid !== r.was).map(r => r.cid)
  repository.store.mirrorLog.logPublish(head, fresh.filter(c => c !== head), SNAPSHOT_PROFILE.name)
  return noteForgotten(repository, init.now, { ...plan, head, relinked: fresh.length })
}

/** Publishes walked back from the pointer to find a forget's head that others published on since. */
const BUILT_ON_LOOKBACK = 16

/**
 * Whether the pointer's chain holds `head` a few publishes back: another device published on the
 * new head between this forget's move and its read back. The forget was done, and is said so.
 */
async function builtOn (repository: Repository, pointer: string, head: string, signal?: AbortSignal): Promise<boolean> {
  try {
    for await (const { entry } of walkHistory(repository.home, pointer, repository.manifestCache, { ...repository.readContext('forget', { signal }), limit: BUILT_ON_LOOKBACK })) {
      if (entry.cid === head) return true
    }
  } catch (err) {
    // A chain this device cannot read is not known to hold the head: the forget says it was contended.
    if (!isUnusable(err)) throw err
  }
  return false
}

/**
 * How many kept publishes a run would seal again (new CIDs): going up the chain from its start,
 * every kept one after the first forgotten one, or from the first whose labels change.
 */
function wouldRelink (plan: ForgetPlan): number {
  let changed = false
  let count = 0
  for (const decision of [...plan.decisions].reverse()) {
    if (!decision.keep) { changed = true; continue }
    if (decision.publish.manifest === undefined) continue
    if (changed || marksChanged(decision.publish)) {
      changed = true
      count++
    }
  }
  return count
}

/** Records a forget that ran (not a dry run) in sync.sqlite for status: the CLI's and the daemon's alike. */
function noteForgotten (repository: Repository, now: Date, done: Forgotten): Forgotten {
  repository.store.retention.forgot({ at: now.toISOString(), kept: done.kept, forgotten: done.forgotten, relinked: done.relinked })
  return done
}

/**
 * The chains forgets replaced, this one's old chain first: each manifest's list gathered (a
 * forgotten head's too), newest kept, at most {@link MAX_REPLACED}. Past that, a prune never
 * deletes the oldest chain's objects: it costs space, never a publish.
 */
function replacedChains (plan: ForgetPlan, now: Date): NonNullable<Manifest['replaced']> {
  const all = [{ cid: plan.pointer, at: now.toISOString() }, ...plan.decisions.flatMap(d => d.publish.manifest?.replaced ?? [])]
  const byCid = new Map<string, { cid: string, at: string }>()
  for (const r of all) if (!byCid.has(r.cid)) byCid.set(r.cid, r)
  return [...byCid.values()].sort((a, b) => b.at.localeCompare(a.at)).slice(0, MAX_REPLACED)
}
