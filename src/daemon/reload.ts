import { loadConfig, type Config } from '../config/index.js'
import { ConfigError } from '../errors.js'
import type { Logger } from './logger.js'
import { planReload, type ReloadPlan } from './reload-plan.js'

/**
 * One call at a time: calls that come while one runs are folded into a single call after it
 * (which then sees things as they are by then).
 */
export function foldCalls (run: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined
  let queued: Promise<void> | undefined
  const call = async (): Promise<void> => {
    if (running === undefined) {
      running = run().finally(() => { running = undefined })
      await running
      return
    }
    queued ??= running.then(async () => {
      queued = undefined
      await call()
    })
    await queued
  }
  return call
}

export interface ReloadTarget {
  readonly logger: Logger
  /** The running config (its `source` is read again). */
  readonly config: () => Config
  readonly stopping: () => boolean
  /** Puts the new config in place: the runner's schedules, the folders (answers what was added and removed). */
  readonly apply: (next: Config) => Promise<{ added: readonly string[], removed: readonly string[] } | undefined>
  /** Told how each reload ended: `refused` says why a config was not taken. */
  readonly onOutcome?: (outcome: { refused: string | null, config: string | null }) => void
}

/**
 * Reads the config file again and applies what can change while running. The whole new config is
 * built first: one that no longer validates is refused, logged, and nothing of it applied; keys
 * that need a restart are named in the log. Never rejects: a failure is logged.
 */
export async function reloadConfig (target: ReloadTarget): Promise<void> {
  const { logger } = target
  if (target.stopping()) {
    logger.warn('reload ignored: the daemon is stopping')
    return
  }
  const source = target.config().source
  let plan: ReloadPlan
  try {
    plan = planReload(target.config(), loadConfig({ configPath: source }))
  } catch (err) {
    // A config error is the user's file, not a bug: its message says all, a stack trace would bury it.
    const problem = err instanceof ConfigError ? err.message : undefined
    logger.error(problem === undefined ? { err, config: source } : { problem, code: (err as ConfigError).code, config: source }, 'reload refused: the config no longer validates; the running one is kept')
    target.onOutcome?.({ refused: problem ?? (err as Error).message, config: source ?? null })
    return
  }
  target.onOutcome?.({ refused: null, config: source ?? null })
  const { next, needRestart, added, removed } = plan
  try {
    const folders = await target.apply(next)
    logger.info({ added: folders?.added ?? added, removed: folders?.removed ?? removed, needRestart }, needRestart.length > 0 ? 'reloaded; restart to apply the rest' : 'reloaded')
  } catch (err) {
    logger.error({ err, config: source, added, removed }, 'reload failed while applying the folders: see the folders in status; restart the daemon if they are not as configured')
  }
}
