import { statSync } from 'node:fs'
import { findConfigFile, loadConfig, type Config } from '../config/index.js'
import { ConfigError } from '../errors.js'
import { reportError } from './run.js'

/** How often a config in error is looked at again for a fix. */
export const CONFIG_RECHECK_MS = 2_000
/** A config seen changed is loaded once it has held still this long: an editor's save may be under way. */
const SETTLE_MS = 250

function fingerprint (path: string | undefined): string {
  if (path === undefined) return ''
  try {
    const s = statSync(path)
    return `${s.mtimeMs}:${s.size}:${s.ino}`
  } catch {
    return 'missing'
  }
}

/**
 * The daemon's config. Under a supervisor that restarts every failed exit (launchd's KeepAlive has
 * no RestartPreventExitStatus=), a bad config would restart the daemon every few seconds forever;
 * there the error is reported once and the file watched until it changes, then loaded again.
 * Elsewhere a bad config fails at once (exit 2) as usual. Undefined when stopped while waiting.
 */
export async function loadDaemonConfig (configPath: string | undefined, signal: AbortSignal, env: NodeJS.ProcessEnv = process.env): Promise<Config | undefined> {
  const wait = env.CIDSYNC_SUPERVISOR === 'launchd'
  for (;;) {
    const path = findConfigFile({ configPath, env })?.path
    const seen = fingerprint(path)
    try {
      return loadConfig({ configPath, env })
    } catch (err) {
      if (!wait || !(err instanceof ConfigError)) throw err
      reportError(err)
      process.stderr.write(`cidsync: waiting for ${path ?? 'a config file'} to change (checked every ${CONFIG_RECHECK_MS / 1000} s)\n`)
    }
    while (!signal.aborted && fingerprint(path) === seen) await pause(CONFIG_RECHECK_MS, signal)
    // Loaded only once it holds still, and never while it reads empty: a file truncated and not yet
    // written again would load as every default (another state dir, another service).
    for (let now = fingerprint(path); !signal.aborted; now = fingerprint(path)) {
      await pause(SETTLE_MS, signal)
      if (fingerprint(path) === now && !/^[^:]*:0:/.test(now)) break
    }
    if (signal.aborted) return undefined
  }
}

async function pause (ms: number, signal: AbortSignal): Promise<void> {
  await new Promise<void>(resolve => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve() }, { once: true })
  })
}
