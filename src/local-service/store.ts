import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { SchemaTooNewError } from '../errors.js'

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
   CREATE TABLE auth_messages (nonce TEXT PRIMARY KEY, address TEXT NOT NULL, message TEXT NOT NULL, expires_at INTEGER NOT NULL, used INTEGER NOT NULL DEFAULT 0) STRICT;
   CREATE TABLE api_keys (key TEXT PRIMARY KEY, address TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT;
   CREATE TABLE files (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, address TEXT NOT NULL, cid TEXT NOT NULL, file_name TEXT NOT NULL,
     mime_type TEXT NOT NULL, size INTEGER NOT NULL, sent_for_deal TEXT NOT NULL DEFAULT '', encryption INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL, last_update INTEGER NOT NULL) STRICT;
   CREATE INDEX files_by_owner ON files (address, seq);
   CREATE TABLE deals (address TEXT NOT NULL, cid TEXT NOT NULL, requested_at INTEGER NOT NULL, active_at INTEGER NOT NULL,
     deal_id INTEGER NOT NULL, miner TEXT NOT NULL, PRIMARY KEY (address, cid)) STRICT;
   CREATE TABLE ipns_keys (ipns_name TEXT PRIMARY KEY, ipns_id TEXT NOT NULL UNIQUE, address TEXT NOT NULL, private_key BLOB NOT NULL,
     cid TEXT NOT NULL DEFAULT '', last_update INTEGER NOT NULL) STRICT;
   CREATE TABLE pointers (user_id TEXT NOT NULL, namespace TEXT NOT NULL, network TEXT NOT NULL, snapshot_cid TEXT NOT NULL,
     engine TEXT NOT NULL, memories INTEGER, updated_at TEXT NOT NULL, PRIMARY KEY (user_id, namespace, network)) STRICT;`,
  // Blocks in append-only pack files (src/local-service/blocks.ts); blocks/ of older versions is read in place.
  `CREATE TABLE packs (id INTEGER PRIMARY KEY, created_at INTEGER NOT NULL) STRICT;
   CREATE TABLE blocks (cid BLOB PRIMARY KEY, pack INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL) STRICT, WITHOUT ROWID;`
]

/** Gives `path` exactly `mode` if it exists with another. */
function tighten (path: string, mode: number): void {
  const stats = statSync(path, { throwIfNoEntry: false })
  if (stats !== undefined && (stats.mode & 0o777) !== mode) chmodSync(path, mode)
}

/**
 * The directory and database private to this user: they hold API keys, the token signing secret
 * and the IPNS private keys (the WAL too). SQLite gives -wal and -shm the database file's mode, so
 * the file is made 0600 before SQLite opens it.
 */
function makePrivate (dir: string, path: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  tighten(dir, 0o700)
  closeSync(openSync(path, 'a', 0o600))
  for (const file of [path, `${path}-wal`, `${path}-shm`]) tighten(file, 0o600)
}

/**
 * Runs `step` again while SQLite answers SQLITE_BUSY (at most 5 s): switching a fresh file to WAL
 * while another process does the same, or runs WAL recovery, can answer BUSY without waiting on
 * the busy timeout (seen once in about 15 when two commands start on a fresh directory at once).
 */
function whileBusy<T> (step: () => T): T {
  const deadline = Date.now() + 5_000
  for (;;) {
    try {
      return step()
    } catch (err) {
      if (!String((err as { code?: unknown }).code ?? '').startsWith('SQLITE_BUSY') || Date.now() > deadline) throw err
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25)
    }
  }
}

/** The local service's database: one SQLite file in its directory, WAL, versioned like the index. */
export function openServiceDatabase (dir: string): Database.Database {
  const path = join(dir, 'service.sqlite')
  makePrivate(dir, path)
  const db = new Database(path)
  // The wait first: two processes opening a fresh directory at once (a daemon and a command)
  // would otherwise see SQLITE_BUSY while the other switches the journal to WAL.
  db.pragma('busy_timeout = 5000')
  whileBusy(() => db.pragma('journal_mode = WAL'))
  db.pragma('synchronous = NORMAL')
  const version = db.pragma('user_version', { simple: true }) as number
  if (version > MIGRATIONS.length) {
    db.close()
    throw new SchemaTooNewError(path, version, MIGRATIONS.length)
  }
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      // Read again under the write lock: the other process may have migrated meanwhile.
      if ((db.pragma('user_version', { simple: true }) as number) > v) return
      db.exec(MIGRATIONS[v] as string)
      db.pragma(`user_version = ${v + 1}`)
    }).immediate()
  }
  return db
}

/** A setting made once and kept (the token signing secret). */
export function settingOr (db: Database.Database, key: string, make: () => string): string {
  const found = db.prepare('SELECT value FROM settings WHERE key = ?').pluck().get(key) as string | undefined
  if (found !== undefined) return found
  const value = make()
  db.prepare('INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)').run(key, value)
  return db.prepare('SELECT value FROM settings WHERE key = ?').pluck().get(key) as string
}
