import { join } from 'node:path'
import type { Command } from 'commander'
import { loadConfig, STATE_NAMES } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { countOf, formatBytes, formatTable, printJson } from '../format.js'
import { action } from '../run.js'
import { explainMissingPointer } from '../service-command.js'
import { FROM_OPTION_HELP, readHistoryFrom } from '../mirror-read.js'
import { makeDirsSync } from '../../util/make-dirs.js'

interface HistoryOptions { config?: string, json?: boolean, reverse?: boolean, limit?: string, namespace?: string, network?: string, from?: string }

const HISTORY_HELP = `
The chain:
Every publish names the one before it, so the pointer's chain is the history.
Only publishes that decrypt under this device's key are shown.
Manifests once read are kept in sync.sqlite in the state dir, so they are fetched once.

Deals:
DEAL is the deal this device asked for that publish: made, pending or overdue.
It is none when the deal was not asked for here, and ? when this device has no index yet.
A publish a forget linked anew shows the deal asked for under the CID it was made with.

Plain roots:
--json gives each publish this device made its plain root, which links its whole history.
Pin it recursively on an IPFS node or a pinning service to hold every block.

Restoring one:
KEPT AS shows the labels given with \`cidsync snapshot --keep\`: a forget keeps those publishes.
Any publish listed restores with \`cidsync restore --cid CID\`, or \`--at TIME\`.`

export function registerHistory (program: Command): void {
  program.command('history')
    .description('the publishes the pointer\'s chain holds, newest first: time, device, entries, bytes added, deal, CID')
    .addHelpText('after', HISTORY_HELP)
    .option('--config <path>', 'config file')
    .option('--namespace <name>', 'default: the config\'s namespace')
    .option('--network <name>', 'default: the config\'s network')
    .option('--from <mirror>', FROM_OPTION_HELP)
    .option('--limit <n>', 'at most this many publishes', '20')
    .option('--reverse', 'oldest first (of the newest --limit)')
    .option('--json', 'print JSON')
    .action(action(async (options: HistoryOptions) => {
      const limit = Number(options.limit)
      if (!Number.isSafeInteger(limit) || limit < 1) throw new UsageError(`--limit ${String(options.limit)}: expected a whole number of 1 or more`)
      const config = loadConfig({ configPath: options.config })
      makeDirsSync(join(config.stateDir, STATE_NAMES.snapshots), 0o700)
      await readHistoryFrom(options, async (repository, where) => {
        const { walkEntries } = await import('../../sync/index.js')
        const pointer = await repository.pointers.current(options.namespace ?? config.namespace, options.network ?? config.network)
          .catch((err: unknown) => { throw explainMissingPointer(err, config, where === 'the primary' ? undefined : where) })
        const dealOf = await dealStates(config.stateDir)
        const rows = []
        for await (const entry of walkEntries(repository.home, pointer.snapshotCid, repository.manifestCache, {
          ...repository.readContext('history', { namespace: options.namespace, network: options.network }), limit
        })) rows.push({ ...entry, deal: dealOfPublish(dealOf, entry), root: repository.store?.plainRoots.root(entry.cid) ?? null })
        const more = rows.at(-1)?.previous
        if (options.reverse === true) rows.reverse()
        if (options.json === true) { printJson(rows); return }
        // Labels last, and only when some publish shown has one: most histories have none.
        const labels = rows.some(r => (r.marks?.length ?? 0) > 0)
        process.stdout.write(formatTable(['TIME', 'DEVICE', 'ENTRIES', 'ADDED', 'DEAL', 'CID', ...(labels ? ['KEPT AS'] : [])],
          rows.map(r => [r.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'), `${r.device.slice(0, 8)}${r.hostname === '' ? '' : ` ${r.hostname}`}`, String(r.entries), formatBytes(r.bytesAdded), r.deal, r.cid,
            // Quoted as JSON: a label holding a quote reads as one label.
            ...(labels ? [(r.marks ?? []).map(m => JSON.stringify(m)).join(', ')] : [])]), new Set([2, 3])))
        process.stdout.write(`${countOf(rows.length, 'publish', 'publishes')}${more !== null && more !== undefined ? ` (more before: --limit ${limit * 2})` : ''}\n`)
      })
    }))
}

/**
 * The deal of a publish: asked for under the CID it was made with. A forget that links it anew
 * gives it a new CID, but its segments, which the deal holds, are the same.
 */
function dealOfPublish (dealOf: (cid: string) => string, entry: { readonly cid: string, readonly publishedAs?: string }): string {
  const own = dealOf(entry.cid)
  return own === 'none' && entry.publishedAs !== undefined ? dealOf(entry.publishedAs) : own
}

/** Where the deal this device asked for each CID stands, from the index (`?` when there is no index yet). */
async function dealStates (stateDir: string): Promise<(cid: string) => string> {
  const { indexPath, openIndex } = await import('../../index/index.js')
  try {
    const index = openIndex(indexPath(stateDir), { readonly: true })
    const states = new Map<string, string>()
    process.once('exit', () => { index.close() })
    return (cid) => {
      if (!states.has(cid)) states.set(cid, index.remote.dealState(cid))
      return states.get(cid) as string
    }
  } catch {
    return () => '?'
  }
}
