import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { countOf, formatTable, printJson } from '../format.js'
import { action } from '../run.js'
import { explainMissingPointer, withService } from '../service-command.js'
import { safeText } from '../safe-text.js'
import { marksProblem } from '../../snapshot/index.js'
import { printPrune, pruneJson, runPrune } from '../prune-run.js'

interface ForgetOptions { config?: string, json?: boolean, dryRun?: boolean, prune?: boolean, unmark?: string[] }

const FORGET_HELP = `
The policy:
[retention] in the config says which publishes to keep (docs/retention.md).
Without [retention], every publish is kept, and forget refuses.
The newest publish and the pointer's are always kept.
So is a publish labelled with \`cidsync snapshot --keep\`.
--unmark LABEL takes that label off every publish carrying it, then applies the policy.

What it does:
The kept publishes are linked anew, each to the kept one before it.
The pointer then moves to the new newest one: history lists only the kept ones.
A kept publish whose link changed gets a new CID; its files and time stay.
Nothing is deleted: the forgotten publishes' objects stay until \`cidsync prune\`.
--prune runs that prune right after, in the same run (\`cidsync prune --help\` says what it does).

Other devices:
They take the new chain at their next publish, as they take any publish.
A publish made while forget runs stops it (exit 1): run it again.
A pointer set back behind this device's own last publish is refused (exit 4).
Run \`cidsync snapshot\` to publish on top of it, then forget again.

--dry-run lists what would be kept and forgotten, and changes nothing.
It does not take --prune: a prune counts from the pointer's history, which a dry run leaves as it is.`

export function registerForget (program: Command): void {
  program.command('forget')
    .description('apply [retention] to the history: keep what the policy keeps, forget the rest from the chain')
    .addHelpText('after', FORGET_HELP)
    .option('--config <path>', 'config file')
    .option('--dry-run', 'list what would be kept and forgotten; change nothing')
    .option('--unmark <label>', 'take this label (`snapshot --keep`) off every publish carrying it first, so the policy alone decides (repeat for several)', (label: string, labels: string[] | undefined) => [...(labels ?? []), label])
    .option('--prune', 'then delete every object no kept publish needs, as `cidsync prune` does')
    .option('--json', 'print JSON')
    .action(action(async (options: ForgetOptions) => {
      const unmark = options.unmark ?? []
      const refused = unmark.length > 0 ? marksProblem(unmark) : undefined
      if (refused !== undefined) throw new UsageError(`--unmark: ${refused}`)
      if (options.prune === true && options.dryRun === true) throw new UsageError('--prune with --dry-run: a prune counts from the history as it is, before this forget, so it would count nothing of it. Run `cidsync forget --dry-run` to see what goes, and `cidsync prune --dry-run` after the forget')
      const config = loadConfig({ configPath: options.config })
      const retention = config.retention
      if (retention === undefined) throw new UsageError('the config has no [retention]: every publish is kept. To forget publishes, add one to the config: docs/retention.md, "The policy `init` writes", has a table to copy')
      await withService(options, async (connection) => {
        const { repository } = connection
        const { describePolicy, formatReasons, systemTimeZoneProblem } = await import('../../retention/index.js')
        const zoneProblem = retention.systemZone === true ? systemTimeZoneProblem() : undefined
        if (zoneProblem !== undefined) process.stderr.write(`cidsync: ${safeText(zoneProblem)}\n`)
        const { forget } = await import('../../sync/index.js')
        const { publishNow } = await import('../../util/clock.js')
        const done = await forget(repository, { policy: retention.policy, now: publishNow(), timeZone: retention.timeZone, dryRun: options.dryRun === true, unmark })
          .catch((err: unknown) => { throw explainMissingPointer(err, config) })
        const rows = done.decisions.map(d => ({ cid: d.publish.cid, at: d.publish.entry.at, device: d.publish.device, hostname: d.publish.entry.hostname, keep: d.keep, reasons: d.reasons, marks: d.publish.marks }))
        // Its lines first: a prune that fails after says what the forget did before.
        const pruning = options.prune === true
        if (options.json === true) {
          const json = { dryRun: options.dryRun === true, policy: describePolicy(retention.policy), timeZone: retention.timeZone, pointer: done.pointer, head: done.head, kept: done.kept, forgotten: done.forgotten, unmarked: done.unmarked, relinked: done.relinked, publishes: rows }
          if (!pruning) { printJson(json); return }
          const run = await runPrune(config, retention, connection, { dryRun: false, json: true }).catch((err: unknown) => {
            // The forget is done: a script must still read what it did. The prune's error follows on stderr.
            printJson({ ...json, prune: null })
            throw err
          })
          printJson({ ...json, prune: pruneJson(run) })
          if (run.refused !== undefined) throw run.refused
          return
        }
        const table = (keep: boolean): string => formatTable(['TIME', 'DEVICE', 'CID', ...(keep ? ['WHY'] : [])],
          rows.filter(r => r.keep === keep).map(r => [r.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'), `${r.device.slice(0, 8)}${r.hostname === '' ? '' : ` ${r.hostname}`}`, r.cid, ...(keep ? [formatReasons(r.reasons, retention.policy, r.marks)] : [])]))
        process.stdout.write(`policy: ${describePolicy(retention.policy)} (${retention.timeZone})\n`)
        process.stdout.write(`keep ${countOf(done.kept, 'publish', 'publishes')}:\n${table(true)}`)
        if (done.unmarked > 0) process.stdout.write(`${options.dryRun === true ? 'would take' : 'took'} ${unmark.map(m => safeText(JSON.stringify(m))).join(', ')} off ${countOf(done.unmarked, 'publish', 'publishes')}\n`)
        if (done.forgotten > 0) process.stdout.write(`${options.dryRun === true ? 'would forget' : 'forgot'} ${countOf(done.forgotten, 'publish', 'publishes')}:\n${table(false)}`)
        if (options.dryRun === true) process.stdout.write(`dry run: nothing changed${done.relinked > 0 ? `; a real run links ${countOf(done.relinked, 'kept publish', 'kept publishes')} anew (new CIDs, same files and times)` : ''}\n`)
        else if (done.head === null) process.stdout.write('nothing to forget\n')
        else process.stdout.write(`the pointer moved to ${done.head} (${countOf(done.relinked, 'publish', 'publishes')} linked anew)${pruning || done.forgotten === 0 ? '' : '; the forgotten publishes\' objects stay until a prune'}\n`)
        if (!pruning) return
        const run = await runPrune(config, retention, connection, { dryRun: false, json: false })
        printPrune(run, config)
        if (run.refused !== undefined) throw run.refused
      })
    }))
}
