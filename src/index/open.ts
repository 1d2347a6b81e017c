import { existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { IndexDamagedError, IndexMissingError, SchemaTooNewError } from '../errors.js'
import { preparePrivateDatabase } from '../util/private-file.js'
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.js'

export interface OpenDatabaseOptions {
  /** Open for reading only (commands that run beside a daemon); the file must exist. */
  readonly readonly?: boolean
  /**
   * Run `PRAGMA quick_check` before anything is written (default: for writers). A damaged file is
   * an {@link IndexDamagedError}, never written on.
   */
  readonly check?: boolean
  /** Migrate a writer's file only this far (a segment written for older readers); default: the newest. */
  readonly schemaVersion?: number
}

const BUSY_TIMEOUT_MS = 5_000

/** SQLite's answers for a file that is not a database or whose pages do not add up. */
export function isDamageError (err: unknown): boolean {
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' && /^SQLITE_(NOTADB|CORRUPT)/.test(code)
}

/**
 * Opens the index once: WAL so readers never block the daemon's writes, `synchronous = NORMAL`
 * (durable at each checkpoint, never corrupt), then the migrations a writer needs. A writer's file
 * is made 0600 (its `-wal` and `-shm` follow) and quick-checked first.
 */
export function openDatabase (path: string, options: OpenDatabaseOptions = {}): Database.Database {
  const readonly = options.readonly === true
  if (readonly && !existsSync(path)) throw new IndexMissingError(path)
  if (!readonly) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    preparePrivateDatabase(path)
  }
  let db: Database.Database
  try {
    db = new Database(path, { readonly, fileMustExist: readonly })
  } catch (err) {
    if (isDamageError(err)) throw new IndexDamagedError(path, (err as Error).message, { cause: err })
    throw err
  }
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
    if (!readonly) {
      db.pragma('journal_mode = WAL')
      db.pragma('synchronous = NORMAL')
      db.pragma('foreign_keys = ON')
    }
    if (options.check ?? !readonly) {
      const result = db.pragma('quick_check(1)', { simple: true })
      if (result !== 'ok') throw new IndexDamagedError(path, `quick_check: ${String(result)}`)
    }
    const version = db.pragma('user_version', { simple: true }) as number
    if (version > SCHEMA_VERSION) throw new SchemaTooNewError(path, version, SCHEMA_VERSION)
    if (readonly && version === 0) throw new IndexMissingError(path)
    if (!readonly) migrate(db, version, options.schemaVersion ?? SCHEMA_VERSION)
    return db
  } catch (err) {
    db.close()
    if (isDamageError(err)) throw new IndexDamagedError(path, (err as Error).message, { cause: err })
    throw err
  }
}

function migrate (db: Database.Database, from: number, to: number): void {
  for (let version = from; version < to; version++) {
    const step = MIGRATIONS[version] as (db: Database.Database) => void
    db.transaction(() => {
      step(db)
      db.pragma(`user_version = ${version + 1}`)
    }).immediate()
  }
}
