import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { Database as Db } from 'better-sqlite3'
import { preparePrivateDatabase } from '../util/private-file.js'
import { makeDirsSync } from '../util/make-dirs.js'

/**
 * Opens one of find's own caches beside the index (0600 in a 0700 dir: file names are private),
 * waiting on a writer rather than failing (the busy timeout is set before WAL is asked for, which
 * itself may wait), and makes its tables. A cache can always be built again from the index and the
 * history, so a lost last transaction costs nothing: `synchronous = NORMAL`.
 */
export function openCacheDatabase (path: string, schema: string): Db {
  makeDirsSync(dirname(path), 0o700)
  preparePrivateDatabase(path)
  const db = new Database(path)
  db.pragma('busy_timeout = 10000')
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.exec(schema)
  return db
}
