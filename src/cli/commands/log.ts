import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { NothingFoundError, PointerNotFoundError, UsageError } from '../../errors.js'
import type { FileVersion, HistoryFill } from '../../find/index.js'
import { countOf, formatBytes, formatTable, printJson } from '../format.js'
import { action } from '../run.js'
import { contentActivity } from '../content-activity.js'
import { safeText } from '../safe-text.js'
import { FROM_OPTION_HELP, readHistoryFrom } from '../mirror-read.js'
import { historyStart, shortTime } from './find-common.js'

interface LogOptions { config?: string, cached?: boolean, json?: boolean, reverse?: boolean, namespace?: string, network?: string, from?: string }

const LOG_HELP = `
Segments:
Each segment of the history is fetched once and kept in the state dir (history-rows.sqlite).
--cached answers from what is kept, and fetches nothing.
Without --cached, older versions are checked against the store: a prune may have removed their content.
Such a version shows FETCH "no (pruned)", and "pruned": true in --json.
docs/find.md, "Timelines: log", says more.`

export function registerLog (program: Command): void {
  program.command('log')
    .description('one file\'s timeline across the history, newest first (as `cidsync history`): each version\'s time, device, size, CID, and whether it can be fetched')
    .addHelpText('after', LOG_HELP)
    .argument('<path>', 'folder/path, as `cidsync ls` and `cidsync find` print it')
    .option('--config <path>', 'config file')
    .option('--cached', 'only what is kept locally: fetch no segment of the history')
    .option('--from <mirror>', FROM_OPTION_HELP)
    .option('--reverse', 'oldest first')
    .option('--namespace <name>', 'default: the config\'s namespace')
    .option('--network <name>', 'default: the config\'s network')
    .option('--json', 'print JSON')
    .action(action(async (text: string, options: LogOptions) => {
      const { checkPruned, heldByListing, splitPath, fileTimeline, openHistoryRows, fillHistory, historyChainKey } = await import('../../find/index.js')
      const split = splitPath(text)
      if (split === undefined) throw new UsageError(`${JSON.stringify(safeText(text))} is not folder/path: give the folder's name, a slash, then the path in it (as \`cidsync find\` prints it)`)
      const config = loadConfig({ configPath: options.config })
      const chainKey = historyChainKey(options.namespace ?? config.namespace, options.network ?? config.network, options.from)
      const history = openHistoryRows(config.stateDir)
      try {
        let filled: HistoryFill | undefined
        let unpublished = false
        const { indexPath, openIndex } = await import('../../index/index.js')
        const index = openIndex(indexPath(config.stateDir), { readonly: true })
        try {
          const activity = (await contentActivity(config)).activity
          let oldestFirst: Array<FileVersion & { pruned?: boolean }> = []
          let forgotten = 0
          let chainPublishes: number | undefined
          const timeline = (): FileVersion[] => {
            const found = fileTimeline(index, history, split.folder, split.path, activity, chainKey)
            forgotten = found.forgotten
            chainPublishes = found.publishes
            return found.versions
          }
          if (options.cached === true) oldestFirst = timeline()
          else {
            const { heldAmongOf } = await import('../../connect/index.js')
            await readHistoryFrom(options, async (repository) => {
              // Nothing published yet (a daemon that has not reached its first publish): the index's own rows still answer.
              const chain = { namespace: options.namespace, network: options.network }
              const start = await historyStart(repository, chain).catch((err: unknown) => { if (err instanceof PointerNotFoundError) return undefined; throw err })
              if (start === undefined) unpublished = true
              else filled = await fillHistory(repository, history, start, chainKey, chain)
              if (filled?.setBackFrom !== undefined) {
                process.stderr.write(`cidsync: the pointer holds ${start}, an older publish than the head this device read before (${filled.setBackFrom}): ` +
                  'the service may have set it back. Versions are shown as of that head; `cidsync pointer` and docs/retention.md, "A pointer set back", say what to do\n')
              }
              // Older versions whose content a prune took are asked of the store that would serve them.
              // A service answers `has` from its whole listing: all of them are asked in one pass of it
              // (the embedded service on this thread: in this process). A directory is asked each.
              const objects = repository.objects
              const held = heldAmongOf(objects) ?? (repository.names === undefined ? undefined : heldByListing(o => objects.list(o)))
              const ask = held === undefined ? async (cid: string, o: { readonly signal?: AbortSignal }) => await objects.has(cid, o) : { held }
              oldestFirst = await checkPruned(index, timeline(), ask)
            })
          }
          // Newest first, as `history` and `git log` list; --reverse for the oldest first.
          const versions = options.reverse === true ? oldestFirst : [...oldestFirst].reverse()
          const kept = { publishes: chainPublishes ?? history.counts().publishes }
          if (options.json === true) {
            printJson({
              folder: split.folder, path: split.path, publishesKept: kept.publishes, forgottenVersions: forgotten, segmentsFetched: filled?.segmentsFetched ?? 0, v1Skipped: filled?.v1Skipped ?? 0,
              versions: versions.map(v => ({ at: new Date(v.at).toISOString(), device: v.deviceId, hostname: v.hostname, seq: v.seq, size: v.size, cid: v.cid, mtime: new Date(v.mtimeMs).toISOString(), deleted: v.deleted, stored: v.stored, fetchable: v.fetchable, current: v.current, ...(v.pruned === undefined ? {} : { pruned: v.pruned }) }))
            })
          } else if (versions.length > 0) {
            process.stdout.write(formatTable(['TIME', 'DEVICE', 'SIZE', 'CID', 'FETCH'], versions.map(v => [
              shortTime(v.at), `${v.deviceId.slice(0, 8)}${v.hostname === '' ? '' : ` ${safeText(v.hostname)}`}`, v.deleted ? '' : formatBytes(v.size),
              v.deleted ? '(deleted)' : v.cid ?? '', v.deleted ? '' : v.fetchable ? `yes (${v.stored})` : `no (${v.pruned === true ? 'pruned' : v.stored})`
            ]), new Set([2])))
            process.stdout.write(`${countOf(versions.length, 'version', 'versions')} of ${safeText(text)}, from the index and ${countOf(kept.publishes, 'publish', 'publishes')} of history kept` +
              `${filled !== undefined && filled.segmentsFetched > 0 ? ` (${countOf(filled.segmentsFetched, 'segment', 'segments')} fetched now)` : ''}` +
              `${filled !== undefined && filled.v1Skipped > 0 ? `; ${countOf(filled.v1Skipped, 'cidsync-sqlite/1 snapshot', 'cidsync-sqlite/1 snapshots')} skipped (no segments to read versions from)` : ''}` +
              `${forgotten > 0 ? `; ${countOf(forgotten, 'older version', 'older versions')} only forgotten publishes held ${forgotten === 1 ? 'is' : 'are'} not shown (docs/retention.md)` : ''}` +
              `${unpublished ? `; nothing is published yet for namespace ${options.namespace ?? config.namespace} on network ${options.network ?? config.network}, so there is no history to read` : ''}\n`)
          }
          if (versions.length === 0) throw new NothingFoundError(`no version of ${JSON.stringify(safeText(text))} in the index or the ${countOf(kept.publishes, 'publish', 'publishes')} of history kept${options.cached === true ? ' (run without --cached to fetch the rest of the history)' : ''}: see \`cidsync find\` for the exact folder/path`)
        } finally {
          index.close()
        }
      } finally {
        history.close()
      }
    }))
}
