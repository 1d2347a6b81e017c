import { existsSync } from 'node:fs'
import type { Command } from 'commander'
import { loadConfig, type Config } from '../../config/index.js'
import { IndexMissingError, LockHeldError } from '../../errors.js'
import type { Reconciled } from '../../sync/index.js'
import { countOf, printJson } from '../format.js'
import { action } from '../run.js'
import { makeDirsSync } from '../../util/make-dirs.js'

/** No daemon: take the lock, mirror the account into the index, let go. */
async function reconcileStandalone (config: Config): Promise<Reconciled> {
  const { acquireLock, createLogger } = await import('../../daemon/index.js')
  makeDirsSync(config.stateDir, 0o700)
  const lock = acquireLock(config.stateDir)
  try {
    const { indexPath, openIndex, readDeviceId } = await import('../../index/index.js')
    // Not made here: an empty index on a fresh device would make the `restore` it needs ask for --force.
    if (!existsSync(indexPath(config.stateDir))) throw new IndexMissingError(indexPath(config.stateDir))
    const index = openIndex(indexPath(config.stateDir))
    try {
      const { reconcile, Repository, SyncStore } = await import('../../sync/index.js')
      const { connectService } = await import('../../connect/index.js')
      const connection = await connectService(config)
      const store = new SyncStore(config.stateDir)
      try {
        const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel })
        // A device that never ran the daemon has no id, so no deals of its own to look at.
        const repository = new Repository(config, connection.clients, { store })
        return await reconcile({ index, repository, logger, deviceId: readDeviceId(config.stateDir) ?? '' })
      } finally {
        store.close()
        await connection.close()
      }
    } finally {
      index.close()
    }
  } finally {
    lock.release()
  }
}

/** Through the running daemon (its status and dashboard then count it), or on its own when none runs. */
export async function reconcileOnce (config: Config): Promise<Reconciled> {
  try {
    return await reconcileStandalone(config)
  } catch (err) {
    if (!(err instanceof LockHeldError)) throw err
    const { postToDaemon } = await import('../status-client.js')
    return JSON.parse(await postToDaemon(config, '/reconcile')) as Reconciled
  }
}

const RECONCILE_HELP = `
When it runs:
The daemon reconciles on [reconcile] schedule and after each publish; this runs one now.
With a daemon running, it asks the daemon (POST /reconcile); with none, it runs on its own.
It says how many uploads and names it read, and how many deals it newly made.`

export function registerReconcile (program: Command): void {
  program.command('reconcile')
    .description('mirror the account now: every page of its uploads, its IPNS names and the deals this device asked for')
    .addHelpText('after', RECONCILE_HELP)
    .option('--config <path>', 'config file')
    .option('--json', 'print JSON')
    .action(action(async (options: { config?: string, json?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      const result = await reconcileOnce(config)
      if (options.json === true) {
        printJson(result)
        return
      }
      process.stdout.write(`the account holds ${countOf(result.remoteFiles, 'upload', 'uploads')}${result.gone > 0 ? ` (${result.gone} no longer listed)` : ''}, ` +
        `${countOf(result.names, 'IPNS name', 'IPNS names')}; ${countOf(result.dealsMade, 'deal', 'deals')} made since the last look` +
        `${result.republished ? '; the snapshot\'s IPNS name was put back on the last snapshot' : ''}\n`)
      // Through a daemon it publishes on top by itself; on its own, nothing would until the next publish.
      if (result.pointerSetBack === true) process.stdout.write('the pointer was found set back to an older publish [ERR_POINTER_ROLLED_BACK]: the daemon publishes on top of it; with none running, `cidsync snapshot` does\n')
    }))
}
