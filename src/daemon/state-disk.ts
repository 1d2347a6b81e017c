import { CidsyncError, StateDiskFullError } from '../errors.js'
import { spaceLeft } from '../util/space-left.js'

/**
 * A start-up failure caused by a full state disk: ENOSPC, SQLite's SQLITE_FULL, or any other
 * failure (SQLite's "disk I/O error" on a -shm it cannot grow) while no space is left there.
 */
export function stateDiskFull (stateDir: string, err: unknown): StateDiskFullError | undefined {
  if (err instanceof CidsyncError) return undefined
  const code = (err as { code?: unknown }).code
  if (code !== 'ENOSPC' && code !== 'SQLITE_FULL' && spaceLeft(stateDir) !== 0) return undefined
  return new StateDiskFullError(stateDir, { cause: err })
}
