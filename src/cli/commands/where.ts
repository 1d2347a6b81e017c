import { existsSync, statSync } from 'node:fs'
import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { NothingFoundError, UsageError } from '../../errors.js'
import { formatBytes, formatTable, printJson } from '../format.js'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'
import { againOptions, shellWord } from '../../util/shell-word.js'
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

/** States in which the content can still be fetched. */
const STILL_STORED = new Set(['stored', 'sent-for-deal', 'deal-active'])

/** What is still stored of content no device holds now. */
function storedLine (state: string): string {
  return STILL_STORED.has(state) ? `its content is still stored${state === 'stored' ? '' : ` (${state})`}, so it can be brought back` : 'its content is not stored, so it cannot be brought back'
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
      // Deleted paths too, always: when no device holds it now, they are what answers.
      const result = await withSearch(config, (index, cache) => where(cache, index, cid, { includeDeleted: true }))
      const live = result.holders.filter(h => !h.deleted)
      const gone = live.length === 0 ? result.holders : []
      const holders = options.deleted === true || live.length === 0 ? result.holders : live
      if (options.json === true) {
        printJson({ cid, file: file ?? null, stored: result.stored, held: live.length > 0, holders: holders.map(h => ({ device: h.deviceId, hostname: h.hostname, folder: h.folder, path: h.path, size: h.size, since: new Date(h.since).toISOString(), deleted: h.deleted })) })
      } else {
        process.stdout.write(gone.length > 0 ? `${cid}: deleted on every device that held it; ${storedLine(result.stored)}\n` : `${cid}${file === undefined ? '' : ` (${safeText(file)})`}: ${result.stored}\n`)
        if (holders.length > 0) {
          process.stdout.write(formatTable(['DEVICE', 'SIZE', gone.length > 0 ? 'DELETED' : 'SINCE', 'PATH'], holders.map(h => [
            `${h.deviceId.slice(0, 8)}${h.hostname === '' ? '' : ` ${safeText(h.hostname)}`}`, formatBytes(h.size), shortTime(h.since), `${safeText(`${h.folder}/${h.path}`)}${h.deleted ? ' (deleted)' : ''}`
          ]), new Set([1])))
        }
      }
      const last = gone.at(-1)
      if (last !== undefined) {
        const path = safeText(`${last.folder}/${last.path}`)
        // A command to paste: the name one shell word, whatever another device put in it.
        const word = `${shellWord(`${last.folder}/${last.path}`)}${againOptions({ config: options.config })}`
        const device = `device ${last.deviceId.slice(0, 8)}${last.hostname === '' ? '' : ` (${safeText(last.hostname)})`}`
        const back = STILL_STORED.has(result.stored) ? `; \`cidsync log ${word}\` lists its versions, and \`cidsync get ${word} --at TIME\` brings one back` : ''
        throw new NothingFoundError(`no device holds ${cid} now: ${path} was deleted on ${device} at ${shortTime(last.since)}${back}`)
      }
      if (live.length === 0) throw new NothingFoundError(`no device's index holds ${cid}, nor held it at a path deleted since`)
    }))
}
