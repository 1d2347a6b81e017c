import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { UsageError, NothingFoundError } from '../../errors.js'
import type { FindResult } from '../../find/index.js'
import type { HistoryEntry } from '../../sync/index.js'
import { countOf, formatBytes, formatTable, printJson } from '../format.js'
import { action } from '../run.js'
import { contentActivity } from '../content-activity.js'
import { safeText } from '../safe-text.js'
import { parseTimeArg } from '../time-arg.js'
import { FROM_OPTION_HELP, readHistoryFrom } from '../mirror-read.js'
import { resolveDevice } from './ls.js'
import { deviceLabel, shortTime, withSearch } from './find-common.js'

interface FindOptions { config?: string, device?: string, allDevices?: boolean, at?: string, deleted?: boolean, literal?: boolean, limit?: string, json?: boolean, namespace?: string, network?: string, from?: string }

const FIND_HELP = `
Patterns:
A plain pattern is a substring of folder/path, in any case.
A pattern with * or ?
is a glob over the whole folder/path, or its end after any slash.
--at searches the index as a past publish saw it; its segments are fetched once and kept.
Nothing found exits 3.
docs/find.md says more.`

export function registerFind (program: Command): void {
  program.command('find')
    .description('search every device\'s files by substring or glob (* and ?) over folder/path, ranked: device, size, mtime, stored state, path')
    .addHelpText('after', FIND_HELP)
    .argument('<pattern>', 'text the folder/path holds (any case), or a glob such as *.pdf or report-??.txt')
    .option('--config <path>', 'config file')
    .option('--device <id>', 'only this device\'s files, by its id or short id')
    .option('--all-devices', 'every device\'s files (the default)')
    .option('--at <time>', 'search the index as the newest publish at or before this time saw it (RFC 3339, a date, an age such as 3d, or now)')
    .option('--deleted', 'include deleted files')
    .option('--literal', 'take * and ? as plain characters')
    .option('--limit <n>', 'at most this many results', '50')
    .option('--from <mirror>', `with --at: ${FROM_OPTION_HELP}`)
    .option('--namespace <name>', 'with --at: default: the config\'s namespace')
    .option('--network <name>', 'with --at: default: the config\'s network')
    .option('--json', 'print JSON')
    .action(action(async (pattern: string, options: FindOptions) => {
      if (options.device !== undefined && options.allDevices === true) throw new UsageError('--device and --all-devices exclude each other')
      const limit = Number(options.limit)
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100_000) throw new UsageError(`--limit ${String(options.limit)}: expected a whole number from 1 to 100000`)
      if (pattern === '') throw new UsageError('the pattern is empty: give some of the name, or a glob such as *.pdf')
      const config = loadConfig({ configPath: options.config })
      const at = options.at === undefined ? undefined : parseTimeArg(options.at)
      // Without --at, find reads this device's index: no home is asked, so none can be named.
      if (at === undefined && options.from !== undefined) throw new UsageError('--from goes with --at: without it, find searches this device\'s own index')
      const { find } = await import('../../find/index.js')
      // What uploads now and what failed is about the index as it is, not a past publish's.
      const activity = at === undefined ? (await contentActivity(config)).activity : undefined
      const search = async (files?: { indexFile: string, searchFile: string }): Promise<FindResult & { labels: string[] }> => await withSearch(config, (index, cache) => {
        const devices = index.entries.devices()
        const deviceId = options.device === undefined ? undefined : resolveDevice(options.device, devices)
        const result = find(cache, index, { pattern, deviceId, includeDeleted: options.deleted === true, literal: options.literal === true, limit }, activity)
        return { ...result, labels: result.results.map(r => deviceLabel(r.deviceId, devices)) }
      }, files)
      let publish: HistoryEntry | undefined
      let result: FindResult & { labels: string[] }
      if (at === undefined) {
        result = await search()
      } else {
        result = await readHistoryFrom(options, async (repository) => {
          const past = await repository.pastPublish(at, { namespace: options.namespace, network: options.network })
          publish = past.publish
          return await search({ indexFile: past.indexPath, searchFile: past.searchPath })
        })
      }
      if (options.json === true) {
        printJson({
          publish: publish === undefined ? null : { cid: publish.cid, at: publish.at, device: publish.device },
          results: result.results.map(r => ({ device: r.deviceId, folder: r.folder, path: r.path, size: r.size, mtime: new Date(r.mtimeMs).toISOString(), cid: r.cid, deleted: r.deleted, stored: r.stored })),
          more: result.more
        })
      } else {
        if (publish !== undefined) process.stdout.write(`as publish ${publish.cid} (${publish.at}, device ${publish.device.slice(0, 8)}) saw it\n`)
        if (result.results.length > 0) {
          process.stdout.write(formatTable(['DEVICE', 'SIZE', 'MTIME', 'STORED', 'PATH'], result.results.map((r, i) => [
            result.labels[i] ?? '', formatBytes(r.size), shortTime(r.mtimeMs), r.deleted ? 'deleted' : r.stored, safeText(`${r.folder}/${r.path}`)
          ]), new Set([1])))
        }
        process.stdout.write(`${countOf(result.results.length, 'result', 'results')}${result.more ? ` (more match: narrow the pattern, or --limit ${limit * 4})` : ''}\n`)
      }
      if (result.results.length === 0) throw new NothingFoundError(`nothing matches ${JSON.stringify(safeText(pattern))}${options.deleted === true ? '' : ' (deleted files too: --deleted)'}`)
    }))
}
