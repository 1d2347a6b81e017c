import type { Repository } from '../repository.js'

/** What a prune or dry run ended with, as it is recorded. */
interface PruneOutcome {
  readonly deleted: Readonly<Record<'root' | 'content' | 'segment' | 'manifest', number>>
  readonly bytes: number
  readonly young: number
  readonly chainsHeld: number
  readonly held: { readonly objects: number, readonly bytes: number }
}

/**
 * Records a prune's outcome in sync.sqlite for status (docs/retention.md, "The daemon"), from
 * the CLI and the daemon alike. A dry run records what a prune would free. A prune records what
 * it deleted; a prune right after it would free nothing, and the account holds the rest.
 */
export function notePruned<P extends PruneOutcome> (repository: Repository, init: { readonly now: Date, readonly dryRun?: boolean }, pruned: P): P {
  const at = init.now.toISOString()
  const dryRun = init.dryRun === true
  const { root, content, segment, manifest } = pruned.deleted
  const counted = { objects: root + content + segment + manifest, bytes: pruned.bytes }
  const held = dryRun ? pruned.held : { objects: Math.max(0, pruned.held.objects - counted.objects), bytes: Math.max(0, pruned.held.bytes - counted.bytes) }
  repository.store.retention.pruned(
    { at, dryRun, held, wouldFree: dryRun ? counted : { objects: 0, bytes: 0 }, young: pruned.young, chainsHeld: pruned.chainsHeld },
    dryRun ? null : { at, ...counted, kinds: { root, content, segment, manifest } })
  return pruned
}
