import { existsSync, statSync } from 'node:fs'
import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { NothingFoundError, UsageError } from '../../errors.js'
import { formatBytes, formatTable, printJson } from '../format.js'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'
import { shortTime, withSearch } from './find-common.js'

interface WhereOptions { config?: string, deleted?: boolean, json?: boolean }

/** The CID asked about: the argument parsed as one, or a local file's, computed with the config's profile. */
async function cidOf (arg: string, profileName: string): Promise<{ cid: string, file: string | undefined }> {
  const { CID } = await import('multiformats/cid')
  if (existsSync(arg) && statSync(arg).isFile()) {
    const { fileCid, cidProfile } = await import('../../content/index.js')
    return { cid: (await fileCid(arg, cidProfile(profileName))).cid.toString(), file: arg }
  }
  try {
    return { cid: CID.parse(arg).toString(), file: undefined }
  } catch {
    throw new UsageError(`${JSON.stringify(safeText(arg))} is neither a CID nor a file: give a CID (as \`cidsync ls\` prints them) or the path of a local file`)
  }
}

export function registerWhere (program: Command): void {
  program.command('where')
    .description('every device and path that holds a CID (or a local file\'s content, its CID computed), since when, and whether its content is stored')
    .argument('<cid-or-file>', 'a CID, or a local file')
    .option('--config <path>', 'config file')
    .option('--deleted', 'include paths where it was deleted')
    .option('--json', 'print JSON')
    .action(action(async (arg: string, options: WhereOptions) => {
      const config = loadConfig({ configPath: options.config })
      const { cid, file } = await cidOf(arg, config.cidProfile)
      const { where } = await import('../../find/index.js')
      const result = await withSearch(config, (index, cache) => where(cache, index, cid, { includeDeleted: options.deleted === true }))
      if (options.json === true) {
        printJson({ cid, file: file ?? null, stored: result.stored, holders: result.holders.map(h => ({ device: h.deviceId, hostname: h.hostname, folder: h.folder, path: h.path, size: h.size, since: new Date(h.since).toISOString(), deleted: h.deleted })) })
      } else {
        process.stdout.write(`${cid}${file === undefined ? '' : ` (${safeText(file)})`}: ${result.stored}\n`)
        if (result.holders.length > 0) {
          process.stdout.write(formatTable(['DEVICE', 'SIZE', 'SINCE', 'PATH'], result.holders.map(h => [
            `${h.deviceId.slice(0, 8)}${h.hostname === '' ? '' : ` ${safeText(h.hostname)}`}`, formatBytes(h.size), shortTime(h.since), `${safeText(`${h.folder}/${h.path}`)}${h.deleted ? ' (deleted)' : ''}`
          ]), new Set([1])))
        }
      }
      if (result.holders.length === 0) throw new NothingFoundError(`no device's index holds ${cid}${options.deleted === true ? '' : ' (where it was deleted: --deleted)'}`)
    }))
}
