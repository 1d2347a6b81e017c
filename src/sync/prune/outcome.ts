import type { Repository } from '../repository.js'
import type { PruneRefusedRecord, RepackPlanRecord } from '../state/index.js'
import type { Repacked } from './repack.js'

/** What a prune or dry run ended with, as it is recorded. */
interface PruneOutcome {
  readonly deleted: Readonly<Record<'root' | 'content' | 'segment' | 'manifest', number>>
  readonly bytes: number
  readonly young: number
  readonly chainsHeld: number
  readonly held: { readonly objects: number, readonly bytes: number }
  readonly refused?: { readonly objects: number, readonly bytes: number, readonly reasons: readonly string[] }
  readonly repacked?: Repacked
}

/**
 * Records a prune's outcome in sync.sqlite for status (docs/retention.md, "The daemon"), from
 * the CLI and the daemon alike. A dry run records what a prune would free. A prune records what
 * it deleted; a prune right after it would free nothing, and the account holds the rest. What the
 * store refused to delete is recorded with it: a partial run is never recorded as a clean one.
 */
export function notePruned<P extends PruneOutcome> (repository: Repository, init: { readonly now: Date, readonly dryRun?: boolean }, pruned: P): P {
  const at = init.now.toISOString()
  const dryRun = init.dryRun === true
  const { root, content, segment, manifest } = pruned.deleted
  const counted = { objects: root + content + segment + manifest, bytes: pruned.bytes }
  const held = dryRun ? pruned.held : { objects: Math.max(0, pruned.held.objects - counted.objects), bytes: Math.max(0, pruned.held.bytes - counted.bytes) }
  const repack = repackRecord(pruned.repacked, dryRun)
  const moved = pruned.repacked !== undefined && pruned.repacked.made > 0 ? { repacked: { packs: pruned.repacked.packs, bytes: pruned.repacked.bytes } } : {}
  repository.store.retention.pruned(
    { at, dryRun, held, wouldFree: dryRun ? counted : { objects: 0, bytes: 0 }, young: pruned.young, chainsHeld: pruned.chainsHeld, ...(repack === undefined ? {} : { repack }) },
    dryRun ? null : { at, ...counted, kinds: { root, content, segment, manifest }, ...refusedRecord(pruned.refused), ...moved })
  return pruned
}

/** What a prune was refused, as its record keeps it: the count and bytes, and the first reason. */
function refusedRecord (refused: PruneOutcome['refused']): { refused?: PruneRefusedRecord } {
  if (refused === undefined || refused.objects === 0) return {}
  return { refused: { objects: refused.objects, bytes: refused.bytes, reason: refused.reasons[0] ?? '' } }
}

/**
 * The repack as a count: a dry run's packs to rewrite; after a prune, those it rewrote wait for a
 * publish beside those an earlier prune rewrote. Packs it could not rewrite (skipped) count as to do.
 */
function repackRecord (repacked: Repacked | undefined, dryRun: boolean): RepackPlanRecord | undefined {
  if (repacked === undefined) return undefined
  const done = !dryRun && repacked.made > 0
  const waits = done && repacked.oldDeleted !== true
  return {
    packs: done ? 0 : repacked.packs,
    freed: done ? 0 : repacked.freed,
    waiting: repacked.waiting + (waits ? repacked.packs : 0),
    waitingBytes: repacked.waitingBytes + (waits ? repacked.freed : 0)
  }
}
