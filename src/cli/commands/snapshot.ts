import { mkdirSync } from 'node:fs'
import type { Command } from 'commander'
import { loadConfig, type Config } from '../../config/index.js'
import { LockHeldError } from '../../errors.js'
import { countOf, printJson } from '../format.js'
import { action } from '../run.js'

interface Published { cid: string, entries: number, skipped: boolean, merged: number }

/** What a caller may ask of one publish (see sync's `PublishOptions`). */
export interface PublishRequest { readonly confirmDrop?: boolean, readonly repairPointer?: boolean }

/** No daemon: take the lock, bring the index up to date with the folders, publish, let go. */
async function publishStandalone (config: Config, request: PublishRequest): Promise<Published> {
  const { acquireLock, createLogger } = await import('../../daemon/index.js')
  mkdirSync(config.stateDir, { recursive: true, mode: 0o700 })
  const lock = acquireLock(config.stateDir)
  const { indexPath, loadOrCreateDeviceId, openIndexRecovering } = await import('../../index/index.js')
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
  // As the daemon does at start: a damaged index moved aside, and one lost since the last publish merges the pointer first.
  const opened = openIndexRecovering(indexPath(config.stateDir))
  const index = opened.index
  try {
    if (opened.damaged !== undefined) logger.warn({ file: index.path, problem: opened.lost, action: `moved aside to ${opened.damaged.movedTo} (kept) and rebuilt from the folders` }, 'recovered a state file')
    const { prepareSyncState, publish } = await import('../../sync/index.js')
    // sync.sqlite: checked, then open for the rest of this run.
    const { recovered, store } = await prepareSyncState(config.stateDir, { indexLost: opened.lost })
    try {
      for (const r of recovered) logger.warn(r, 'recovered a state file')
      const deviceId = loadOrCreateDeviceId(config.stateDir, (r) => { logger.warn(r, 'recovered a state file') })
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
        return await publish({ index, clients: connection.clients, logger, deviceId, store }, { config, passphrase: process.env.CIDSYNC_SNAPSHOT_PASSPHRASE, ...request })
      } finally {
        await connection.close()
      }
    } finally {
      store.close()
    }
  } finally {
    index.close()
    lock.release()
  }
}

/** Publishes through the running daemon, or on its own when none runs. */
export async function publishOnce (config: Config, request: PublishRequest = {}): Promise<Published> {
  try {
    return await publishStandalone(config, request)
  } catch (err) {
    if (!(err instanceof LockHeldError)) throw err
    const { postToDaemon } = await import('../status-client.js')
    const query = [request.confirmDrop === true ? 'confirmDrop=1' : '', request.repairPointer === true ? 'repairPointer=1' : ''].filter(q => q !== '').join('&')
    return JSON.parse(await postToDaemon(config, `/snapshot${query === '' ? '' : `?${query}`}`)) as Published
  }
}

export function registerSnapshot (program: Command): void {
  program.command('snapshot')
    .description('publish now and print the snapshot CID: through the running daemon, or on its own after catching up with the folders')
    .option('--config <path>', 'config file')
    .option('--json', 'print JSON')
    .option('--confirm-drop', 'publish even though it drops many of this device\'s entries at once (status says when a publish is held for that)')
    .action(action(async (options: { config?: string, json?: boolean, confirmDrop?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      const published = await publishOnce(config, { confirmDrop: options.confirmDrop === true })
      if (options.json === true) printJson(published)
      else process.stdout.write(`${published.cid}  ${countOf(published.entries, 'entry', 'entries')}${published.skipped ? ' (unchanged here since the last snapshot)' : ''}${published.merged > 0 ? `, merged ${countOf(published.merged, 'other snapshot', 'other snapshots')}` : ''}\n`)
    }))
}
