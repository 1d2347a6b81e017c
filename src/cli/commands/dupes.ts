import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { countOf, formatBytes, printJson } from '../format.js'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'
import { withSearch } from './find-common.js'

interface DupesOptions { config?: string, minSize?: string, limit?: string, json?: boolean }

export function registerDupes (program: Command): void {
  program.command('dupes')
    .description('the same content at several paths or devices, largest reclaimable bytes first, with the total')
    .option('--config <path>', 'config file')
    .option('--min-size <bytes>', 'only content of at least this many bytes', '1')
    .option('--limit <n>', 'list at most this many (the total counts all)', '100')
    .option('--json', 'print JSON')
    .action(action(async (options: DupesOptions) => {
      const minSize = Number(options.minSize)
      const limit = Number(options.limit)
      if (!Number.isSafeInteger(minSize) || minSize < 0) throw new UsageError(`--min-size ${String(options.minSize)}: expected a whole number of bytes`)
      if (!Number.isSafeInteger(limit) || limit < 1) throw new UsageError(`--limit ${String(options.limit)}: expected a whole number of 1 or more`)
      const config = loadConfig({ configPath: options.config })
      const { dupes } = await import('../../find/index.js')
      const result = await withSearch(config, (_index, cache) => dupes(cache, { minSize, limit }))
      if (options.json === true) {
        printJson({ groups: result.groups.map(g => ({ cid: g.cid, size: g.size, reclaimable: g.reclaimable, copies: g.copies.map(c => ({ device: c.deviceId, folder: c.folder, path: c.path })) })), totalReclaimable: result.totalReclaimable, more: result.more })
        return
      }
      for (const g of result.groups) {
        process.stdout.write(`${formatBytes(g.reclaimable)} reclaimable: ${g.copies.length} copies of ${formatBytes(g.size)} ${g.cid}\n`)
        for (const c of g.copies) process.stdout.write(`  ${c.deviceId.slice(0, 8)}  ${safeText(`${c.folder}/${c.path}`)}\n`)
      }
      process.stdout.write(`${formatBytes(result.totalReclaimable)} reclaimable in all${result.more ? ` (${countOf(limit, 'group', 'groups')} listed: --limit for more)` : ''}\n`)
    }))
}
