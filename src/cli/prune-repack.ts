import { existsSync } from 'node:fs'
import { hostname } from 'node:os'
import type { Config } from '../config/index.js'
import { LockHeldError } from '../errors.js'
import type { RepackClaim, RepackInit, Repository } from '../sync/index.js'

/** What a CLI prune repacks with; `release` closes what it opened. */
export interface RepackHold {
  readonly init?: RepackInit
  release: () => void
}

/**
 * This device's index for a prune's repack, read to plan. Recording the moves writes the index,
 * so it is claimed under the daemon's lock, and only once there is something to move: a daemon
 * holds the index while it runs (its own scheduled prune repacks), and a daemon starting during
 * the rest of the prune is not turned away. Its content index objects are compacted too. A state
 * dir without an index or a device id has nothing to move.
 */
export async function holdForRepack (config: Config, repository: Repository, dryRun: boolean): Promise<RepackHold> {
  const { indexPath, openIndex, readDeviceId, LEAN_CACHE_KIB } = await import('../index/index.js')
  const deviceId = readDeviceId(config.stateDir)
  const path = indexPath(config.stateDir)
  if (deviceId === undefined || !existsSync(path)) return { release: () => {} }
  // A small cache: the plan reads a few rows a pack, and a large compaction reads on a thread of its own.
  const index = openIndex(path, { readonly: true, cacheKiB: LEAN_CACHE_KIB })
  const claim = async (): Promise<RepackClaim | { skipped: string }> => {
    const { acquireLock, readDaemonInfo } = await import('../daemon/index.js')
    let lock: ReturnType<typeof acquireLock>
    try {
      lock = acquireLock(config.stateDir)
    } catch (err) {
      if (!(err instanceof LockHeldError)) throw err
      return { skipped: await lockHolder(readDaemonInfo(config.stateDir), config) }
    }
    try {
      const writable = openIndex(path)
      return { index: writable, release: () => { writable.close(); lock.release() } }
    } catch (err) {
      lock.release()
      throw err
    }
  }
  const { compactOwnIndex } = await import('../sync/index.js')
  // Only sync.sqlite and uploads: no lock needed, and the daemon's own storing may run beside it.
  const compactIndex = async (signal?: AbortSignal): Promise<string[]> => await compactOwnIndex(repository, { index, deviceId, signal })
  return {
    init: { index, deviceId, hostname: hostname(), compactIndex, ...(dryRun ? {} : { claim }) },
    release: () => { index.close() }
  }
}

/** Who holds the state dir, and what to do: a daemon repacks on its schedule; another command ends. */
async function lockHolder (info: { readonly pid: number, readonly status?: string } | undefined, config: Config): Promise<string> {
  const pid = info === undefined ? '' : ` (pid ${info.pid})`
  if (info?.status !== undefined) {
    const schedule = config.retention?.schedule ?? ''
    const next = await nextRun(schedule)
    return `a daemon${pid} runs on this state dir: its scheduled prune rewrites them${next === undefined ? '' : ` at ${next.toISOString()}`} ([retention] schedule = "${schedule}"), or stop it and run \`cidsync prune\` again`
  }
  return `another cidsync command${pid} is using this state dir: run \`cidsync prune\` again once it ends`
}

/** When a cron expression fires next, in this process's time zone as the daemon's scheduler reads it. */
async function nextRun (expression: string): Promise<Date | undefined> {
  if (expression === '') return undefined
  const cron = await import('node-cron')
  try {
    const task = cron.createTask(expression, () => {})
    try {
      // A task never started has no next run; its next runs are still computed from the expression.
      return task.getNextRuns(1)[0]
    } finally {
      await task.destroy()
    }
  } catch {
    // An expression the config check let through but cron refuses: the schedule is still named.
    return undefined
  }
}
