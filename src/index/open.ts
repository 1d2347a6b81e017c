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
  /** SQLite's page cache, in KiB (default: the build's 16 MiB); see {@link LEAN_CACHE_KIB}. */
  readonly cacheKiB?: number
  /** A file built aside and made durable by its caller: its journal in memory, no syncs (util/sqlite-file.ts). */
  readonly scratch?: boolean
}

/**
 * The page cache of the daemon's connections. better-sqlite3 builds SQLite with 16 MiB a
 * connection. The quick check at open and every full scan (the folder totals status shows) fill
 * it, and it is kept, in an idle daemon's memory too (docs/benchmarks.md, "Memory beside
 * syncthing"). The B-tree's inner pages of a million rows fit in 2 MiB; leaves are read through
 * the OS's cache.
 */
export const LEAN_CACHE_KIB = 2_048

/**
 * Opens the index once (util/sqlite-file.ts: 0600, WAL, quick check, migrations), with foreign
 * keys on. Damage is an {@link IndexDamagedError} (exit 4), a newer schema a
 * {@link SchemaTooNewError}, a reader's missing file an {@link IndexMissingError}.
 */
export function openDatabase (path: string, options: OpenDatabaseOptions = {}): Database.Database {
  return openSqliteFile(path, {
    readonly: options.readonly,
    check: options.check,
    cacheKiB: options.cacheKiB,
    scratch: options.scratch,
    migrations: MIGRATIONS,
    version: options.schemaVersion,
    foreignKeys: true,
    damaged: (p, message, cause) => new IndexDamagedError(p, message, cause === undefined ? undefined : { cause }),
    tooNew: (p, found, known) => new SchemaTooNewError(p, found, known),
    missing: (p) => new IndexMissingError(p)
  })
}
