import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { UsageError } from '../../errors.js'
import { formatBytes, formatTable, printJson } from '../format.js'
import { action } from '../run.js'

interface LsOptions { config?: string, device?: string, allDevices?: boolean, deleted?: boolean, json?: boolean }

export function registerLs (program: Command): void {
  program.command('ls')
    .description('list what the index holds: size, CID, where it stands remotely (local-only, stored, sent-for-deal), folder/path')
    .argument('[prefix]', 'only entries whose folder/path starts with this')
    .option('--config <path>', 'config file')
    .option('--device <id>', 'entries of this device (default: this one)')
    .option('--all-devices', 'entries of every device the index knows')
    .option('--deleted', 'include deletions (tombstones)')
    .option('--json', 'print JSON')
    .action(action(async (prefix: string | undefined, options: LsOptions) => {
      if (options.device !== undefined && options.allDevices === true) throw new UsageError('--device and --all-devices exclude each other')
      const config = loadConfig({ configPath: options.config })
      const { indexPath, openIndex, readDeviceId } = await import('../../index/index.js')
      const index = openIndex(indexPath(config.stateDir), { readonly: true })
      try {
        const deviceId = options.allDevices === true ? undefined : options.device ?? readDeviceId(config.stateDir)
        const entries = index.entries.list({ prefix: prefix ?? '', deviceId, includeDeleted: options.deleted === true })
        if (options.json === true) {
          printJson(entries.map(e => ({
            device: e.deviceId, folder: e.folder, path: e.path, size: e.size, mtime: new Date(e.mtimeMs).toISOString(),
            cid: e.cid, cidProfile: e.cidProfile, updatedAt: new Date(e.updatedAt).toISOString(), deleted: e.deleted, seq: e.seq,
            remote: index.remote.stateOf(e.cid)
          })))
          return
        }
        const many = options.allDevices === true
        const rows = entries.map(e => [
          ...(many ? [e.deviceId.slice(0, 8)] : []),
          formatBytes(e.size), e.deleted ? '(deleted)' : e.cid ?? '', e.deleted ? '' : index.remote.stateOf(e.cid), `${e.folder}/${e.path}`
        ])
        const header = [...(many ? ['DEVICE'] : []), 'SIZE', 'CID', 'REMOTE', 'PATH']
        process.stdout.write(formatTable(header, rows, new Set([many ? 1 : 0])))
      } finally {
        index.close()
      }
    }))
}
