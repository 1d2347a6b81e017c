import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { PruneDeletesRefusedError, UsageError } from '../../errors.js'
import { exactSpanText } from '../../retention/index.js'
import { countOf, formatBytes, printJson } from '../format.js'
import { action } from '../run.js'
import { explainMissingPointer, withService } from '../service-command.js'
import { holdForRepack } from '../prune-repack.js'
import type { Repacked } from '../../sync/index.js'
import type { ServiceConnection } from '../../connect/index.js'
import type { ReclaimResult } from '../../local-service/index.js'

interface PruneOptions { config?: string, json?: boolean, dryRun?: boolean }

const PRUNE_HELP = `
What it deletes:
Every object no kept publish needs: the manifests and segments of chains a forget replaced,
and the content objects whose records name no file of a kept publish.

What it keeps:
The pointer's chain and everything its rows name.
Anything stored less than [retention] prune_margin ago (a day by default).
A chain a forget replaced less than prune_margin ago, whole: a restore may be reading it.

Mirrors:
Each mirror deletes the same objects, in its own loop, once it catches up.

Space:
On the embedded service the space comes back once its packs are reclaimed.
On a remote service the uploads are deleted; storage deals already made run to their end.

Repack:
A content pack stays while one of its files is kept.
The packs with the most unused bytes are rewritten: their live files copied into new packs.
It stops once at most 5% of the content held is unused.
The moves are recorded in this device's index, under the state dir's lock.
A daemon holding it rewrites them on its own schedule instead.
The old pack goes at the first prune after the next publish.

A publish made while it runs stops it before anything is deleted (exit 1): run it again.
A pointer set back behind this device's own last publish is refused (exit 4).
Run \`cidsync snapshot\` to publish on top of it, then prune again.
An object the service refuses to delete (a plan that keeps uploads) stays; the rest are
deleted, and it exits 1 naming how many were refused and why.
--dry-run counts what would be deleted, and deletes nothing.`

export function registerPrune (program: Command): void {
  program.command('prune')
    .description('delete every object no kept publish needs, on the service and the mirrors, and say what it freed')
    .addHelpText('after', PRUNE_HELP)
    .option('--config <path>', 'config file')
    .option('--dry-run', 'count what would be deleted; delete nothing')
    .option('--json', 'print JSON')
    .action(action(async (options: PruneOptions) => {
      const config = loadConfig({ configPath: options.config })
      const retention = config.retention
      if (retention === undefined) throw new UsageError('the config has no [retention]: every publish is kept, so nothing is pruned. Add one to the config (docs/retention.md, "The policy `init` writes", has a table to copy), then run `cidsync forget` and `cidsync prune`')
      await withService(options, async ({ repository, reclaim, reclaimDue }) => {
        const { prune } = await import('../../sync/index.js')
        const { publishNow } = await import('../../util/clock.js')
        // Counted as batches go, so a prune that fails midway says what it did, and that a rerun finishes.
        let deletedSoFar = { objects: 0, bytes: 0 }
        const onProgress = (event: { type: string, detail?: unknown }): void => { if (event.type === 'prune:deleted') deletedSoFar = event.detail as typeof deletedSoFar }
        const hold = await holdForRepack(config, repository, options.dryRun === true)
        const done = await prune(repository, { marginMs: retention.pruneMarginSeconds * 1000, now: publishNow(), dryRun: options.dryRun === true, onProgress, ...(hold.init === undefined ? {} : { repack: hold.init }) })
          .catch((err: unknown) => {
            if (deletedSoFar.objects > 0 && options.json !== true) process.stderr.write(`cidsync: the prune deleted ${countOf(deletedSoFar.objects, 'object', 'objects')} (${formatBytes(deletedSoFar.bytes)}) before it failed; run \`cidsync prune\` again: it finishes what is left\n`)
            throw explainMissingPointer(err, config)
          })
          .finally(() => { hold.release() })
        const objects = done.deleted.root + done.deleted.content + done.deleted.segment + done.deleted.manifest
        // The embedded service gives the space back now; a remote one reclaims on its own. With
        // nothing deleted, still when one is due: a prune killed during its reclaim is finished so.
        const due = options.dryRun !== true && reclaim !== undefined && (objects > 0 || await reclaimDue?.() === true)
        const space = due ? await reclaimed(reclaim) : undefined
        // A partial prune says what it did, then fails: never exit 0 with objects left it should delete.
        const refused = done.refused !== undefined && done.refused.objects > 0 ? new PruneDeletesRefusedError(done.refused) : undefined
        if (options.json === true) {
          printJson({ dryRun: options.dryRun === true, ...done, reclaimed: space ?? null })
          if (refused !== undefined) throw refused
          return
        }
        const what = `${countOf(objects, 'object', 'objects')} (${done.deleted.content} content, ${done.deleted.segment} segments, ${done.deleted.manifest} manifests, ${done.deleted.root} plain roots), ${formatBytes(done.bytes)}`
        process.stdout.write(`${options.dryRun === true ? 'would delete' : 'deleted'} ${what}\n`)
        // Held back by the margin: say how long, so "0 deleted" is not read as "nothing to delete".
        const kept = options.dryRun === true ? 'would keep' : 'kept'
        const margin = `prune_margin (${exactSpanText(retention.pruneMarginSeconds)})`
        if (done.young > 0) process.stdout.write(`${kept} ${countOf(done.young, 'object', 'objects')} no publish needs: stored within ${margin}; a prune once it has passed deletes them\n`)
        if (done.chainsHeld > 0) process.stdout.write(`${kept} ${countOf(done.chainsHeld, 'replaced chain', 'replaced chains')} whole: forgotten within ${margin}; a prune once it has passed deletes them\n`)
        if (done.othersForgotten > 0) {
          process.stdout.write(`${countOf(done.othersForgotten, 'publish', 'publishes')} of other devices ${options.dryRun === true ? 'would go' : 'went'}: their plain roots may still hold those blocks on the service; run \`cidsync prune\` on each device too (a daemon does on its schedule)\n`)
        }
        repackLines(done.repacked, options.dryRun === true)
        if (space !== undefined) {
          process.stdout.write('error' in space
            ? `the embedded service could not give the space back now (${space.error}); a later prune tries again\n`
            : `the embedded service gave back ${formatBytes(space.diskBytesFreed)} of disk (${countOf(space.packsRewritten, 'pack file', 'pack files')} rewritten, ${countOf(space.packsRemoved, 'pack file', 'pack files')} removed)\n` +
              // Else "deleted 40 MiB" beside "gave back 0 B" reads as a failure.
              (space.deadBytesLeft > 0 ? `${formatBytes(space.deadBytesLeft)} of deleted blocks stay inside the service's pack files that are still mostly live: a pack file is rewritten once a quarter of it is dead (docs/local-service.md, "Reclaiming space")\n` : ''))
        }
        if (options.dryRun !== true && objects > 0) {
          // Mirrors are named only where there are some: a user without one must not look for them.
          const one = config.mirrors.length === 1
          const mirrors = config.mirrors.length === 0 ? '' : `; ${one ? 'the mirror deletes' : 'the mirrors delete'} the same objects as ${one ? 'it catches' : 'they catch'} up`
          process.stdout.write(`storage deals already made are not cancelled${mirrors}\n`)
        }
        if (refused !== undefined) throw refused
      })
    }))
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
