import type { Config } from '../config/index.js'
import { PruneDeletesRefusedError } from '../errors.js'
import { exactSpanText } from '../retention/index.js'
import { MAX_PRUNE_LIST_OBJECTS } from '../snapshot/index.js'
import type { ServiceConnection } from '../connect/index.js'
import type { ReclaimResult } from '../local-service/index.js'
import type { ServiceClients } from '../remote/index.js'
import type { Pruned, Repacked, Repository } from '../sync/index.js'
import { countOf, formatBytes, formatCount } from './format.js'
import { holdForRepack } from './prune-repack.js'
import { explainMissingPointer } from './service-command.js'

/** What one prune did, for its lines or its JSON. */
export interface PruneRun {
  readonly dryRun: boolean
  readonly done: Pruned
  /** The embedded service's reclaim after the deletes; undefined where none ran. */
  readonly space: ReclaimResult | { error: string } | undefined
  /** Objects the service refused to delete: the run fails after saying what it did. */
  readonly refused: PruneDeletesRefusedError | undefined
}

type Retention = NonNullable<Config['retention']>
type Connection = ServiceConnection & { readonly repository: Repository<ServiceClients> }

/**
 * Runs `cidsync prune` over an open connection: the prune, its repack where it may, and the
 * embedded service's reclaim. `prune` and `forget --prune` both run it.
 */
export async function runPrune (config: Config, retention: Retention, { repository, reclaim, reclaimDue }: Connection, options: { readonly dryRun: boolean, readonly json: boolean }): Promise<PruneRun> {
  const { prune } = await import('../sync/index.js')
  const { publishNow } = await import('../util/clock.js')
  // Counted as batches go, so a prune that fails midway says what it did, and that a rerun finishes.
  let deletedSoFar = { objects: 0, bytes: 0 }
  const onProgress = (event: { type: string, detail?: unknown }): void => { if (event.type === 'prune:deleted') deletedSoFar = event.detail as typeof deletedSoFar }
  const hold = await holdForRepack(config, repository, options.dryRun)
  const done = await prune(repository, { marginMs: retention.pruneMarginSeconds * 1000, now: publishNow(), dryRun: options.dryRun, onProgress, ...(hold.init === undefined ? {} : { repack: hold.init }) })
    .catch((err: unknown) => {
      if (deletedSoFar.objects > 0 && !options.json) process.stderr.write(`cidsync: the prune deleted ${countOf(deletedSoFar.objects, 'object', 'objects')} (${formatBytes(deletedSoFar.bytes)}) before it failed; run \`cidsync prune\` again: it finishes what is left\n`)
      throw explainMissingPointer(err, config)
    })
    .finally(() => { hold.release() })
  // The embedded service gives the space back now; a remote one reclaims on its own. With
  // nothing deleted, still when one is due: a prune killed during its reclaim is finished so.
  const due = !options.dryRun && reclaim !== undefined && (objectsOf(done) > 0 || await reclaimDue?.() === true)
  const space = due ? await reclaimed(reclaim) : undefined
  // A partial prune says what it did, then fails: never exit 0 with objects left it should delete.
  const refused = done.refused !== undefined && done.refused.objects > 0 ? new PruneDeletesRefusedError(done.refused) : undefined
  return { dryRun: options.dryRun, done, space, refused }
}

/** The prune's JSON (`prune --json`, and `forget --prune --json` under `prune`). */
export function pruneJson (run: PruneRun): object {
  return { dryRun: run.dryRun, ...run.done, reclaimed: run.space ?? null }
}

const objectsOf = (done: Pruned): number => done.deleted.root + done.deleted.content + done.deleted.segment + done.deleted.manifest

/** The prune's lines on stdout: what went, what stayed and why, and what the service gave back. */
export function printPrune (run: PruneRun, config: Config): void {
  const { done, space, dryRun } = run
  const retention = config.retention
  const objects = objectsOf(done)
  const what = `${countOf(objects, 'object', 'objects')} (${formatCount(done.deleted.content)} content, ${countOf(done.deleted.segment, 'segment', 'segments')}, ${countOf(done.deleted.manifest, 'manifest', 'manifests')}, ${countOf(done.deleted.root, 'plain root', 'plain roots')}), ${formatBytes(done.bytes)}`
  process.stdout.write(`${dryRun ? 'would delete' : 'deleted'} ${what}\n`)
  // What the account holds, as status shows it: before the deletes in a dry run, after them else.
  const held = dryRun ? done.held : { objects: Math.max(0, done.held.objects - objects), bytes: Math.max(0, done.held.bytes - done.bytes) }
  process.stdout.write(`the account holds ${countOf(held.objects, 'object', 'objects')} (${formatBytes(held.bytes)})${dryRun ? '' : ' after the deletes'}\n`)
  // Held back by the margin: say how long, so "0 deleted" is not read as "nothing to delete".
  const kept = dryRun ? 'would keep' : 'kept'
  const margin = `prune_margin (${exactSpanText(retention?.pruneMarginSeconds ?? 0)})`
  if (done.young > 0) process.stdout.write(`${kept} ${countOf(done.young, 'object', 'objects')} no publish needs: stored within ${margin}; a prune once it has passed deletes them\n`)
  // A prune announces at most so many dead content objects: the rest are the next run's, said so.
  if ((done.deferred ?? 0) > 0) process.stdout.write(`${countOf(done.deferred ?? 0, 'more dead content object', 'more dead content objects')} ${dryRun ? 'would wait' : 'wait'} for the next prune: one run deletes at most ${formatCount(MAX_PRUNE_LIST_OBJECTS)}\n`)
  if (done.chainsHeld > 0) process.stdout.write(`${kept} ${countOf(done.chainsHeld, 'replaced chain', 'replaced chains')} whole: forgotten within ${margin}; a prune once it has passed deletes them\n`)
  if (done.othersForgotten > 0) {
    process.stdout.write(`${countOf(done.othersForgotten, 'publish', 'publishes')} of other devices ${dryRun ? 'would go' : 'went'}: their plain roots may still hold those blocks on the service; run \`cidsync prune\` on each device too (a daemon does on its schedule)\n`)
  }
  repackLines(done.repacked, dryRun)
  if (space !== undefined) {
    process.stdout.write('error' in space
      ? `the embedded service could not give the space back now (${space.error}); a later prune tries again\n`
      : `the embedded service gave back ${formatBytes(space.diskBytesFreed)} of disk (${countOf(space.packsRewritten, 'pack file', 'pack files')} rewritten, ${countOf(space.packsRemoved, 'pack file', 'pack files')} removed)\n` +
        // Else "deleted 40 MiB" beside "gave back 0 B" reads as a failure.
        (space.deadBytesLeft > 0 ? `${formatBytes(space.deadBytesLeft)} of deleted blocks stay inside the service's pack files that are still mostly live: a pack file is rewritten once a quarter of it is dead (docs/local-service.md, "Reclaiming space")\n` : ''))
  }
  if (!dryRun && objects > 0) {
    // Mirrors are named only where there are some: a user without one must not look for them.
    const one = config.mirrors.length === 1
    const mirrors = config.mirrors.length === 0 ? '' : `; ${one ? 'the mirror deletes' : 'the mirrors delete'} the same objects as ${one ? 'it catches' : 'they catch'} up`
    process.stdout.write(`storage deals already made are not cancelled${mirrors}\n`)
  }
}

/** The embedded service's reclaim after the deletes; a failure (another process reclaiming) is said, not fatal: the deletes stand. */
async function reclaimed (reclaim: NonNullable<ServiceConnection['reclaim']>): Promise<ReclaimResult | { error: string }> {
  try {
    return await reclaim()
  } catch (err) {
    return { error: (err as Error).message }
  }
}

/** What the repack did, would do, or why it did not: its old packs go only at a prune after a publish. */
function repackLines (repacked: Repacked | undefined, dryRun: boolean): void {
  if (repacked === undefined) return
  const packs = countOf(repacked.packs, 'mostly unused content pack', 'mostly unused content packs')
  const copied = `${countOf(repacked.blobs, 'live file', 'live files')} (${formatBytes(repacked.bytes)})`
  const after = 'after the next publish (the daemon\'s, or `cidsync snapshot`) and the prune after it'
  if (repacked.packs > 0 && repacked.skipped !== undefined) process.stdout.write(`${packs} not rewritten (${formatBytes(repacked.freed)} unused): ${repacked.skipped}\n`)
  else if (repacked.packs > 0 && dryRun) process.stdout.write(`would rewrite ${packs}: ${copied} copied into new packs, freeing ${formatBytes(repacked.freed)} ${after}\n`)
  else if (repacked.packs > 0) {
    const one = repacked.packs === 1
    process.stdout.write(`rewrote ${packs}: ${copied} copied into ${countOf(repacked.made, 'new pack', 'new packs')}; ` +
      `the old ${one ? 'one goes' : 'ones go'} (${formatBytes(repacked.freed)} unused) ${after}\n`)
  }
  if ((repacked.unread ?? 0) > 0) process.stdout.write(`${countOf(repacked.unread ?? 0, 'content pack', 'content packs')} to rewrite could not be read (gone, or not the bytes listed): left whole\n`)
  if (repacked.waiting > 0) {
    const one = repacked.waiting === 1
    process.stdout.write(`${countOf(repacked.waiting, 'content pack', 'content packs')} rewritten by an earlier prune ${one ? 'waits' : 'wait'} for a publish (the daemon's, or \`cidsync snapshot\`); ` +
      `the prune after it deletes ${one ? 'it' : 'them'} (${formatBytes(repacked.waitingBytes)} unused)\n`)
  }
}
