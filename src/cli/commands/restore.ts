import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import { countOf, printJson } from '../format.js'
import { action } from '../run.js'
import { withService } from '../service-command.js'

interface RestoreOptions { config?: string, json?: boolean, namespace?: string, network?: string, cid?: string, force?: boolean, dryRun?: boolean, asDevice?: string, allowUnencrypted?: boolean }

function progressBar (): ((received: number, total: number | undefined) => void) | undefined {
  if (process.stderr.isTTY !== true) return undefined
  let last = 0
  return (received, total) => {
    const now = Date.now()
    if (now - last < 100 && received !== total) return
    last = now
    const mb = (received / 1e6).toFixed(1)
    const bar = total === undefined ? '' : `[${'#'.repeat(Math.round(received / total * 30)).padEnd(30, '.')}] `
    process.stderr.write(`\rfetching ${bar}${mb} MB${total === undefined ? '' : ` of ${(total / 1e6).toFixed(1)} MB`}`)
    if (received === total) process.stderr.write('\n')
  }
}

export function registerRestore (program: Command): void {
  program.command('restore')
    .description('install the index from the pointer (or a given CID): fetch, verify, decrypt, check, swap in')
    .option('--config <path>', 'config file')
    .option('--namespace <name>', 'default: the config\'s namespace')
    .option('--network <name>', 'default: the config\'s network')
    .option('--cid <cid>', 'restore this snapshot instead of the pointer\'s')
    .option('--force', 'replace an existing index (kept as a backup beside it; the 3 newest backups are kept)')
    .option('--allow-unencrypted', 'accept a snapshot with no cipher although this device encrypts (only if a device of yours publishes with encryption = "none")')
    .option('--dry-run', 'say what would be fetched and replaced, and do nothing')
    .option('--as-device <id>', 'continue as a device the restored index knows')
    .option('--json', 'print JSON')
    .action(action(async (options: RestoreOptions) => {
      const config = loadConfig({ configPath: options.config })
      const { acquireLock } = await import('../../daemon/index.js')
      const { mkdirSync } = await import('node:fs')
      mkdirSync(config.stateDir, { recursive: true, mode: 0o700 })
      // No daemon may write the index while it is replaced: take its lock (a running one is named).
      const lock = options.dryRun === true ? undefined : acquireLock(config.stateDir)
      try {
        await withService(options, async ({ clients }) => {
          const { restore } = await import('../../sync/index.js')
          const result = await restore(clients, {
            config, namespace: options.namespace ?? config.namespace, network: options.network ?? config.network, cid: options.cid,
            force: options.force, dryRun: options.dryRun, allowUnencrypted: options.allowUnencrypted, asDevice: options.asDevice, passphrase: process.env.CIDSYNC_SNAPSHOT_PASSPHRASE, onProgress: progressBar()
          })
          if (options.json === true) { printJson(result); return }
          if (result.dryRun) {
            process.stdout.write(`would fetch ${result.cid}${result.backup === undefined ? ' into an empty state dir' : ' and replace the index (kept as a backup)'}\n`)
            return
          }
          process.stdout.write(`restored ${result.cid}: ${countOf(result.header?.entries ?? 0, 'entry', 'entries')} from device ${result.header?.device.slice(0, 8) ?? '?'}` +
            `${result.backup === undefined ? '' : `; the old index is at ${result.backup}`}\nthe next \`cidsync daemon\` rescans the folders against it\n`)
        })
      } finally {
        lock?.release()
      }
    }))
}
