import { chmodSync, closeSync, openSync, statSync } from 'node:fs'

/** SQLite names its side files after the database; they take the database file's mode. */
const SIDE_FILES = ['', '-wal', '-shm', '-journal']

/**
 * Makes `path` (and its SQLite side files) private before SQLite opens it: created 0600 when
 * missing, so the `-wal` and `-shm` SQLite makes beside it are 0600 too (SQLite copies the
 * database's mode), and tightened to 0600 when an older cidsync left it readable by others.
 */
export function preparePrivateDatabase (path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  for (const suffix of SIDE_FILES) {
    const file = `${path}${suffix}`
    const stats = statSync(file, { throwIfNoEntry: false })
    if (stats === undefined || (stats.mode & 0o077) === 0) continue
    try {
      chmodSync(file, stats.mode & 0o700)
    } catch {
      // Not ours to change (another owner): SQLite's own open says what is wrong, if anything.
    }
  }
}
