import { existsSync } from 'node:fs'
import { makeDirsSync } from './make-dirs.js'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { preparePrivateDatabase } from './private-file.js'
import { InternalError } from '../errors.js'

/** One schema step; `PRAGMA user_version` records how many were applied. Released steps are never edited. */
export type Migration = (db: Database.Database) => void

/** How a file's failures are named: each file has its own error classes (its name, its remedy). */
export interface SqliteFileErrors {
  /** Not a database, or pages that do not add up. */
  readonly damaged: (path: string, message: string, cause?: unknown) => Error
  /** Written by a newer cidsync. */
  readonly tooNew: (path: string, found: number, known: number) => Error
  /** A reader's file that does not exist or holds no schema yet. */
  readonly missing?: (path: string) => Error
}

export interface SqliteFileInit extends SqliteFileErrors {
  /** Open for reading only (commands beside a daemon); the file must exist. */
  readonly readonly?: boolean
  /** `PRAGMA quick_check` before anything is written (default: for writers). */
  readonly check?: boolean
  readonly migrations: readonly Migration[]
  /** Migrate a writer's file only this far (a file written for older readers); default: all. */
  readonly version?: number
  readonly foreignKeys?: boolean
  /** `FULL` where a lost last transaction costs more than a redo (default `NORMAL`). */
  readonly synchronous?: 'NORMAL' | 'FULL'
  /**
   * A file being built aside that nothing else opens, removed if the build fails and made durable
   * by its caller (fsync, then rename) before anything relies on it: its rollback journal kept in
   * memory (`OFF` is refused in SQLite's defensive mode, which better-sqlite3 sets) and no syncs,
   * so every page is written once, into the file itself. Never for a file in use.
   */
  readonly scratch?: boolean
  /**
   * SQLite's page cache of this connection, in KiB (default: the build's, 16 MiB in better-sqlite3).
   * Set before the quick check, which would otherwise fill it.
   */
  readonly cacheKiB?: number
}

const BUSY_TIMEOUT_MS = 5_000

/** SQLite's answers for a file that is not a database or whose pages do not add up. */
export function isDamageError (err: unknown): boolean {
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' && /^SQLITE_(NOTADB|CORRUPT)/.test(code)
}

/**
 * Opens one of cidsync's SQLite files the one way they all are: a writer's file made 0600 first (its
 * `-wal` and `-shm` follow), the busy timeout set before anything that may wait on another
 * connection (switching to WAL does), WAL so readers never block the writer, `synchronous =
 * NORMAL` unless asked for `FULL` (durable at each checkpoint, never corrupt), an optional quick check, then the
 * migrations, each in an immediate transaction that reads the version again once it holds the
 * write lock, so two processes opening an old file at once apply each step once. Damage,
 * a newer schema and a missing file are each the caller's own coded error.
 */
export function openSqliteFile (path: string, init: SqliteFileInit): Database.Database {
  const readonly = init.readonly === true
  const missing = init.missing ?? ((p: string) => init.damaged(p, 'the file does not exist'))
  if (readonly && !existsSync(path)) throw missing(path)
  if (!readonly) {
    makeDirsSync(dirname(path), 0o700)
    preparePrivateDatabase(path)
  }
  let db: Database.Database
  try {
    db = new Database(path, { readonly, fileMustExist: readonly })
  } catch (err) {
    throw isDamageError(err) ? init.damaged(path, (err as Error).message, err) : err
  }
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
    if (init.cacheKiB !== undefined) db.pragma(`cache_size = -${Math.max(1, Math.floor(init.cacheKiB))}`)
    if (!readonly) {
      db.pragma(`journal_mode = ${init.scratch === true ? 'MEMORY' : 'WAL'}`)
      db.pragma(`synchronous = ${init.scratch === true ? 'OFF' : init.synchronous ?? 'NORMAL'}`)
      if (init.foreignKeys === true) db.pragma('foreign_keys = ON')
    }
    if (init.check ?? !readonly) {
      const result = db.pragma('quick_check(1)', { simple: true })
      if (result !== 'ok') throw init.damaged(path, `quick_check: ${String(result)}`)
    }
    const known = init.migrations.length
    const version = db.pragma('user_version', { simple: true }) as number
    if (version > known) throw init.tooNew(path, version, known)
    if (readonly && version === 0 && known > 0) throw missing(path)
    if (!readonly) migrate(db, init.migrations, init.version ?? known)
    return db
  } catch (err) {
    db.close()
    throw isDamageError(err) ? init.damaged(path, (err as Error).message, err) : err
  }
}

function migrate (db: Database.Database, migrations: readonly Migration[], to: number): void {
  for (;;) {
    const applied = db.transaction(() => {
      // Read under the write lock: another process may have migrated since this one looked.
      const version = db.pragma('user_version', { simple: true }) as number
      if (version >= to) return false
      ;(migrations[version] as Migration)(db)
      db.pragma(`user_version = ${version + 1}`)
      return true
    }).immediate()
    if (!applied) return
  }
}

/**
 * Turns off the rollback journal of `schema` on `db`: for a file made aside, removed if anything
 * fails, whose writes need no undo. SQLite's defensive mode (better-sqlite3's default) ignores
 * `journal_mode = OFF` without an error, so it is lifted for this one pragma and set again. The
 * mode is read back: a journal still written would double every write.
 */
export function journalOff (db: Database.Database, schema = 'main'): void {
  db.unsafeMode(true)
  try {
    db.pragma(`${schema}.journal_mode = OFF`)
  } finally {
    db.unsafeMode(false)
  }
  const mode = String(db.pragma(`${schema}.journal_mode`, { simple: true }))
  if (mode !== 'off') throw new InternalError(`SQLite kept the ${schema} database's journal (${mode}) where it was told to turn it off`)
}
