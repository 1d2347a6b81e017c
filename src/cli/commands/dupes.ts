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
    .description('the same content at several paths or devices, most reclaimable on this device first, with the total')
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
      const { readDeviceId } = await import('../../index/index.js')
      // Only this device's extra copies free space here: another device's copy is its own disk.
      const own = readDeviceId(config.stateDir)
      const result = await withSearch(config, (_index, cache) => dupes(cache, { own, minSize, limit }))
      if (options.json === true) {
        printJson({ device: own ?? null, groups: result.groups.map(g => ({ cid: g.cid, size: g.size, here: g.here, reclaimable: g.reclaimable, copies: g.copies.map(c => ({ device: c.deviceId, thisDevice: c.deviceId === own, folder: c.folder, path: c.path })) })), totalReclaimable: result.totalReclaimable, more: result.more })
        return
      }
      for (const g of result.groups) {
        process.stdout.write(`${g.reclaimable > 0 ? formatBytes(g.reclaimable) : 'nothing'} reclaimable here: ${g.copies.length} copies of ${formatBytes(g.size)} ${g.cid}, ${g.here} on this device\n`)
        for (const c of g.copies) process.stdout.write(`  ${c.deviceId.slice(0, 8)}  ${safeText(`${c.folder}/${c.path}`)}${c.deviceId === own ? '  (this device)' : ''}\n`)
      }
      process.stdout.write(`${formatBytes(result.totalReclaimable)} reclaimable on this device in all${result.more ? ` (${countOf(limit, 'group', 'groups')} listed: --limit for more)` : ''}. ` +
        `Only extra copies on this device count: another device's copy frees nothing here.\n`)
    }))
}
