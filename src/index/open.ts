import type Database from 'better-sqlite3'
import { IndexDamagedError, IndexMissingError, SchemaTooNewError } from '../errors.js'
import { openSqliteFile } from '../util/sqlite-file.js'
import { MIGRATIONS } from './migrations.js'

export { isDamageError } from '../util/sqlite-file.js'

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

/**
 * Opens the index once (util/sqlite-file.ts: 0600, WAL, quick check, migrations), with foreign
 * keys on. Damage is an {@link IndexDamagedError} (exit 4), a newer schema a
 * {@link SchemaTooNewError}, a reader's missing file an {@link IndexMissingError}.
 */
export function openDatabase (path: string, options: OpenDatabaseOptions = {}): Database.Database {
  return openSqliteFile(path, {
    readonly: options.readonly,
    check: options.check,
    migrations: MIGRATIONS,
    version: options.schemaVersion,
    foreignKeys: true,
    damaged: (p, message, cause) => new IndexDamagedError(p, message, cause === undefined ? undefined : { cause }),
    tooNew: (p, found, known) => new SchemaTooNewError(p, found, known),
    missing: (p) => new IndexMissingError(p)
  })
}
