import { statfsSync } from 'node:fs'
import { CidsyncError, StateDiskFullError } from '../errors.js'

/** Bytes the daemon's user may still write on the state dir's file system; undefined when unknown. */
function spaceLeft (stateDir: string): number | undefined {
  try {
    const fs = statfsSync(stateDir)
    return (process.getuid?.() === 0 ? fs.bfree : fs.bavail) * fs.bsize
  } catch {
    return undefined
  }
}

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
