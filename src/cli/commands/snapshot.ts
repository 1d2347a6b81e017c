import { mkdirSync } from 'node:fs'
import type { Command } from 'commander'
import { loadConfig, type Config } from '../../config/index.js'
import { LockHeldError } from '../../errors.js'
import { printJson } from '../format.js'
import { action } from '../run.js'

interface Published { cid: string, entries: number, skipped: boolean, merged: number }

/** No daemon: take the lock, bring the index up to date with the folders, publish, let go. */
async function publishStandalone (config: Config): Promise<Published> {
  const { acquireLock, createLogger } = await import('../../daemon/index.js')
  mkdirSync(config.stateDir, { recursive: true, mode: 0o700 })
  const lock = acquireLock(config.stateDir)
  const { indexPath, loadOrCreateDeviceId, openIndex } = await import('../../index/index.js')
  const index = openIndex(indexPath(config.stateDir))
  try {
    const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
    const deviceId = loadOrCreateDeviceId(config.stateDir)
    const { createWatcher } = await import('../../watch/index.js')
    const watcher = createWatcher({ index, logger, deviceId }, { folders: config.folders, profile: config.cidProfile, hashWorkers: config.watch.hashWorkers, settleMs: config.watch.settleMs })
    try {
      await watcher.catchUp()
    } finally {
      await watcher.stop()
    }
    const { connectService } = await import('../../connect/index.js')
    const connection = await connectService(config)
    try {
      const { publish } = await import('../../sync/index.js')
      return await publish({ index, clients: connection.clients, logger, deviceId }, { config, passphrase: process.env.CIDSYNC_SNAPSHOT_PASSPHRASE })
    } finally {
      await connection.close()
    }
  } finally {
    index.close()
    lock.release()
  }
}

export function registerSnapshot (program: Command): void {
  program.command('snapshot')
    .description('publish now and print the snapshot CID: through the running daemon, or on its own after catching up with the folders')
    .option('--config <path>', 'config file')
    .option('--json', 'print JSON')
    .action(action(async (options: { config?: string, json?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      let published: Published
      try {
        published = await publishStandalone(config)
      } catch (err) {
        if (!(err instanceof LockHeldError)) throw err
        const { postToDaemon } = await import('../status-client.js')
        published = JSON.parse(await postToDaemon(config, '/snapshot')) as Published
      }
      if (options.json === true) printJson(published)
      else process.stdout.write(`${published.cid}${published.skipped ? '  (unchanged since the last snapshot)' : `  ${published.entries} entries${published.merged > 0 ? `, merged ${published.merged} other snapshot(s)` : ''}`}\n`)
    }))
}
