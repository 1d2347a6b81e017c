import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { printJson } from '../format.js'
import { action } from '../run.js'
import { withService } from '../service-command.js'
import { printPrune, pruneJson, runPrune } from '../prune-run.js'

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
      await withService(options, async (connection) => {
        const run = await runPrune(config, retention, connection, { dryRun: options.dryRun === true, json: options.json === true })
        if (options.json === true) printJson(pruneJson(run))
        else printPrune(run, config)
        if (run.refused !== undefined) throw run.refused
      })
    }))
}
