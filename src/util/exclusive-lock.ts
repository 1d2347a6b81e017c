import Database from 'better-sqlite3'
import { chmodSync, closeSync, openSync } from 'node:fs'

/** A held exclusive lock: `release` drops it; `held` says whether it still is. */
export interface ExclusiveLock {
  readonly held: () => boolean
  readonly release: () => void
}

/**
 * Takes an exclusive SQLite lock on `path` (an fcntl lock underneath, made 0600), or answers
 * undefined when another process holds it. The kernel drops it when its holder dies, even by
 * kill -9: no stale lock file to clean up.
 */
export function tryExclusiveLock (path: string): ExclusiveLock | undefined {
  closeSync(openSync(path, 'a', 0o600))
  chmodSync(path, 0o600)
  const db = new Database(path, { timeout: 0 })
  try {
    db.pragma('locking_mode = EXCLUSIVE')
    db.exec('BEGIN EXCLUSIVE')
  } catch (err) {
    db.close()
    if (String((err as { code?: unknown }).code ?? '').startsWith('SQLITE_BUSY')) return undefined
    throw err
  }
  return { held: () => db.open, release: () => { if (db.open) db.close() } }
}
