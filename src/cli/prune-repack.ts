import { existsSync } from 'node:fs'
import { hostname } from 'node:os'
import type { Config } from '../config/index.js'
import { LockHeldError } from '../errors.js'
import type { Index } from '../index/index.js'
import type { RepackInit } from '../sync/index.js'

/** What a CLI prune repacks with, or why it does not; `release` lets go of what it holds. */
export interface RepackHold {
  readonly init?: RepackInit
  /** Why mostly dead packs stay whole this run, when they do. */
  readonly skipped?: string
  release: () => void
}

/**
 * This device's index for a prune's repack, which records where each moved blob lies. Written
 * under the daemon's lock: a running daemon holds the index, and its own scheduled prune repacks.
 * A dry run only reads it. A state dir without an index or a device id has nothing to move.
 */
export async function holdForRepack (config: Config, dryRun: boolean): Promise<RepackHold> {
  const { indexPath, openIndex, readDeviceId } = await import('../index/index.js')
  const deviceId = readDeviceId(config.stateDir)
  if (deviceId === undefined || !existsSync(indexPath(config.stateDir))) return { release: () => {} }
  let lock: { release: () => void } | undefined
  let skipped: string | undefined
  if (!dryRun) {
    const { acquireLock } = await import('../daemon/index.js')
    try {
      lock = acquireLock(config.stateDir)
    } catch (err) {
      if (!(err instanceof LockHeldError)) throw err
      // Still counted, from the index read only: the daemon's own prune moves them.
      skipped = 'a daemon runs on this state dir; its scheduled prune repacks them'
    }
  }
  const readonly = lock === undefined
  let index: Index
  try {
    index = openIndex(indexPath(config.stateDir), { readonly })
  } catch (err) {
    lock?.release()
    throw err
  }
  return {
    init: { index, deviceId, hostname: hostname(), ...(readonly && !dryRun ? { planOnly: true } : {}) },
    ...(skipped === undefined ? {} : { skipped }),
    release: () => {
      index.close()
      lock?.release()
    }
  }
}
