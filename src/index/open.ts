import { existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { IndexMissingError, SchemaTooNewError } from '../errors.js'
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.js'

export interface OpenDatabaseOptions {
  /** Open for reading only (commands that run beside a daemon); the file must exist. */
  readonly readonly?: boolean
}

const BUSY_TIMEOUT_MS = 5_000

/**
 * Opens the index once: WAL so readers never block the daemon's writes, `synchronous = NORMAL`
 * (durable at each checkpoint, never corrupt), then the migrations a writer needs.
 */
export function openDatabase (path: string, options: OpenDatabaseOptions = {}): Database.Database {
  const readonly = options.readonly === true
  if (readonly && !existsSync(path)) throw new IndexMissingError(path)
  if (!readonly) mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path, { readonly, fileMustExist: readonly })
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
    if (!readonly) {
      db.pragma('journal_mode = WAL')
      db.pragma('synchronous = NORMAL')
      db.pragma('foreign_keys = ON')
    }
    const version = db.pragma('user_version', { simple: true }) as number
    if (version > SCHEMA_VERSION) throw new SchemaTooNewError(path, version, SCHEMA_VERSION)
    if (readonly && version === 0) throw new IndexMissingError(path)
    if (!readonly) migrate(db, version)
    return db
  } catch (err) {
    db.close()
    throw err
  }
}

function migrate (db: Database.Database, from: number): void {
  for (let version = from; version < SCHEMA_VERSION; version++) {
    const step = MIGRATIONS[version] as (db: Database.Database) => void
    db.transaction(() => {
      step(db)
      db.pragma(`user_version = ${version + 1}`)
    }).immediate()
  }
}
