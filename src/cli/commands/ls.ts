import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { DeviceNotFoundError, NothingMatchesError, UsageError } from '../../errors.js'
import type { KnownDevice } from '../../index/index.js'
import type { ContentState } from '../../find/index.js'
import { contentActivity } from '../content-activity.js'
import { countOf, formatBytes, formatTable, printJson } from '../format.js'
import { action } from '../run.js'
import { safeText } from '../safe-text.js'

/** `--device`: a whole id, or the short one `ls --all-devices` and status print (any unique prefix). */
export function resolveDevice (wanted: string, devices: readonly KnownDevice[]): string {
  const matches = devices.filter(d => d.id === wanted || d.id.startsWith(wanted.toLowerCase()))
  const known = devices.map(d => `${d.id.slice(0, 8)} (${d.hostname ?? '?'})`).join(', ')
  if (matches.length === 0) throw new DeviceNotFoundError(`no device ${wanted} in the index${known === '' ? ' (it holds no device yet)' : `: it knows ${known}`}`)
  if (matches.length > 1) throw new UsageError(`--device ${wanted} matches ${matches.length} devices: give more of the id (${known})`)
  return (matches[0] as KnownDevice).id
}

/** `notes/x` or `notes` for a folder `notes`; a bare `no` may still be the start of one's name. */
function startsWithFolder (prefix: string, folders: readonly string[]): boolean {
  const slash = prefix.indexOf('/')
  return slash === -1 ? folders.some(f => f.startsWith(prefix)) : folders.includes(prefix.slice(0, slash))
}

interface LsOptions { config?: string, device?: string, allDevices?: boolean, deleted?: boolean, json?: boolean }

const LS_HELP = `
The STORED column:
It says where each file's content stands, from local-only to deal-active.
Failed files are listed after the table, each with why and what to do.
docs/operations.md, "Files' content: what is stored, and seen where", explains each state.

Prefixes and devices:
A prefix starts with a folder's name: notes/work, or /notes/work.
A prefix that names no folder is said so, with the folder names; nothing under it exits 3.
--device takes the short id ls prints; an unknown one exits 3.
A device that never ran the daemon (a fresh restore) is shown every device's rows.
ls only reads the index, so it is safe while the daemon runs.`

export function registerLs (program: Command): void {
  program.command('ls')
    .description('list what the index holds: size, CID, where its content stands (local-only, queued, uploading, stored, sent-for-deal, deal-active, failed), folder/path')
    .addHelpText('after', LS_HELP)
    .argument('[prefix]', 'only entries whose folder/path starts with this')
    .option('--config <path>', 'config file')
    .option('--device <id>', 'entries of this device, by its id or short id (default: this one)')
    .option('--all-devices', 'entries of every device the index knows')
    .option('--deleted', 'include deletions (tombstones)')
    .option('--json', 'print JSON')
    .action(action(async (given: string | undefined, options: LsOptions) => {
      // `ls /notes` is how a path looks to a shell user; the index's paths are `folder/path`.
      const prefix = given?.replace(/^\/+/, '')
      if (options.device !== undefined && options.allDevices === true) throw new UsageError('--device and --all-devices exclude each other')
      const config = loadConfig({ configPath: options.config })
      const { indexPath, openIndex, readDeviceId } = await import('../../index/index.js')
      const index = openIndex(indexPath(config.stateDir), { readonly: true })
      try {
        const own = readDeviceId(config.stateDir)
        // A device that never ran the daemon has no id yet (a fresh restore): its index holds only
        // other devices' rows, which must not be shown as its own.
        const everyDevice = options.allDevices === true || (options.device === undefined && own === undefined)
        if (everyDevice && options.allDevices !== true) process.stderr.write('cidsync: this device has no rows yet (its id is made on the first `cidsync daemon`): showing every device\'s rows\n')
        const deviceId = everyDevice ? undefined : options.device !== undefined ? resolveDevice(options.device, index.entries.devices()) : own
        const entries = index.entries.list({ prefix: prefix ?? '', deviceId, includeDeleted: options.deleted === true })
        const { contentState } = await import('../../find/index.js')
        const { activity } = await contentActivity(config)
        const stateOf = (e: typeof entries[number]): ContentState => e.deleted ? { state: 'local-only' } : contentState(index, e.cid, e, activity)
        let nothing: NothingMatchesError | undefined
        if (entries.length === 0 && prefix !== undefined && prefix !== '') {
          const folders = [...new Set([...config.folders.map(f => f.name), ...index.entries.devices().flatMap(d => index.entries.totals(d.id).map(t => t.folder))])].sort()
          nothing = startsWithFolder(prefix, folders)
            ? new NothingMatchesError(`nothing in the index under ${safeText(prefix)}`)
            : new NothingMatchesError(`nothing matches ${safeText(prefix)}: a prefix starts with the folder's name (folder/path, as \`cidsync ls\` prints them); ` +
              `${folders.length === 0 ? 'no folder is configured or indexed yet' : `the folders are: ${folders.map(safeText).join(', ')}`}`)
        }
        if (options.json === true) {
          printJson(entries.map(e => ({
            device: e.deviceId, folder: e.folder, path: e.path, size: e.size, mtime: new Date(e.mtimeMs).toISOString(),
            cid: e.cid, cidProfile: e.cidProfile, updatedAt: new Date(e.updatedAt).toISOString(), deleted: e.deleted, seq: e.seq,
            ...(e.meta === null ? {} : { kind: e.meta.kind, mode: `0${e.meta.mode.toString(8)}`, uid: e.meta.uid, gid: e.meta.gid, owner: e.meta.owner, group: e.meta.group, ...(e.meta.target === null ? {} : { target: e.meta.target }) }),
            remote: index.remote.stateOf(e.cid),
            ...((state) => ({ content: state.state, ...(state.why === undefined ? {} : { why: state.why }) }))(stateOf(e))
          })))
          if (nothing !== undefined) throw nothing
          return
        }
        const many = everyDevice
        const failed: string[] = []
        const rows = entries.map(e => {
          const state = stateOf(e)
          const failure = activity.failed.get(`${e.folder}/${e.path}`)
          if (state.state === 'failed' && failure !== undefined) failed.push(`  ${safeText(`${e.folder}/${e.path}`)}: failed since ${failure.since}: ${safeText(state.why ?? '')}${failure.advice === undefined ? '' : `: ${safeText(failure.advice)}`}`)
          return [
            ...(many ? [e.deviceId.slice(0, 8)] : []),
            // A symlink has no content to store: what it says is its target.
            formatBytes(e.size), e.deleted ? '(deleted)' : e.cid ?? '', e.deleted ? '' : e.meta?.kind === 'symlink' ? 'symlink' : state.state,
            e.meta?.kind === 'symlink' ? `${e.folder}/${e.path} -> ${e.meta.target ?? ''}` : `${e.folder}/${e.path}`
          ]
        })
        const header = [...(many ? ['DEVICE'] : []), 'SIZE', 'CID', 'STORED', 'PATH']
        // Nothing under a prefix is "nothing found" (exit 3), not an empty success a script cannot tell apart.
        if (nothing !== undefined) throw nothing
        process.stdout.write(formatTable(header, rows, new Set([many ? 1 : 0])))
        if (failed.length > 0) process.stdout.write(`\n${countOf(failed.length, 'file', 'files')} not stored:\n${failed.join('\n')}\n`)
      } finally {
        index.close()
      }
    }))
}
