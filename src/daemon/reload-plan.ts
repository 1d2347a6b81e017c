import { excludeOwnDirs, type Config } from '../config/index.js'

/** Config keys a running daemon keeps as it started with: a reload names them. */
export const RESTART_ONLY_KEYS = ['stateDir', 'status', 'service', 'cidProfile', 'watch'] as const

/** A reload, built whole before any of it is applied. */
export interface ReloadPlan {
  /** The config to run with: the file's, with the restart-only keys as they are. */
  readonly next: Config
  readonly needRestart: ReadonlyArray<typeof RESTART_ONLY_KEYS[number]>
  readonly added: readonly string[]
  readonly removed: readonly string[]
}

type Folder = Config['folders'][number]
const same = (a: Folder, b: Folder): boolean => JSON.stringify(a) === JSON.stringify(b)

/** Everything a reload applies, computed before any of it is: what changes, what needs a restart. */
export function planReload (current: Config, fromFile: Config): ReloadPlan {
  // The dirs left out of the folders are those of the state dir and service the daemon runs with.
  const loaded = { ...fromFile, folders: excludeOwnDirs(fromFile.folders, current) }
  return {
    next: { ...loaded, stateDir: current.stateDir, status: current.status, service: current.service, cidProfile: current.cidProfile, watch: current.watch },
    needRestart: RESTART_ONLY_KEYS.filter(key => JSON.stringify(loaded[key]) !== JSON.stringify(current[key])),
    added: loaded.folders.filter(f => !current.folders.some(c => same(c, f))).map(f => f.name),
    removed: current.folders.filter(c => !loaded.folders.some(f => same(c, f))).map(f => f.name)
  }
}
