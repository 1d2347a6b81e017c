import { chmodSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { SchemaTooNewError, ServiceDataDamagedError } from '../errors.js'
import { openSqliteFile, type Migration } from '../util/sqlite-file.js'
import { backoffMs, sleep, type Backoff } from '../util/backoff.js'
import { makeDirsSync } from '../util/make-dirs.js'

const MIGRATIONS: readonly Migration[] = [
  db => db.exec(`CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
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
     engine TEXT NOT NULL, memories INTEGER, updated_at TEXT NOT NULL, PRIMARY KEY (user_id, namespace, network)) STRICT;`),
  // Blocks in append-only pack files (src/local-service/blocks.ts); blocks/ of older versions is read in place.
  db => db.exec(`CREATE TABLE packs (id INTEGER PRIMARY KEY, created_at INTEGER NOT NULL) STRICT;
   CREATE TABLE blocks (cid BLOB PRIMARY KEY, pack INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL) STRICT, WITHOUT ROWID;`),
  // Invitations for `signup = "invite"` (invitations.ts): only each code's hash is kept.
  db => db.exec(`CREATE TABLE invitations (code_hash TEXT PRIMARY KEY, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
     used_by TEXT, used_at INTEGER) STRICT;`),
  // Each IPNS name's current signed record and its sequence (ipns-records.ts); NULL until the first is signed.
  db => db.exec('ALTER TABLE ipns_keys ADD COLUMN record BLOB; ALTER TABLE ipns_keys ADD COLUMN sequence INTEGER;'),
  // A deleted upload leaves the listing, yet its bytes stay stored until space is reclaimed: they
  // still count against the account's quota and the service's total (files.ts, delete_file).
  db => db.exec('ALTER TABLE files ADD COLUMN deleted_at INTEGER;'),
  // Space given back (reclaim.ts): a dead block is condemned before its row goes, and a put that
  // finds it condemned writes it again; each pack carries the reclaim epoch it was made in (only
  // older ones are rewritten) and when its rows left it (its id is never used again).
  db => db.exec(`ALTER TABLE blocks ADD COLUMN condemned INTEGER;
   ALTER TABLE packs ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE packs ADD COLUMN removed_at INTEGER;
   CREATE INDEX blocks_by_pack ON blocks (pack, offset, length);
   CREATE INDEX blocks_condemned ON blocks (cid) WHERE condemned IS NOT NULL;`),
  // The uploads of one CID (file_info; uploads-in-process.ts: a prune's deletes and stat in the
  // embedded service's process), without reading every upload the account made.
  db => db.exec('CREATE INDEX IF NOT EXISTS files_by_cid ON files (cid, address);')
]

/** Gives the directory exactly 0700 if it exists with another: it holds API keys and the token signing secret. */
function tightenDir (dir: string): void {
  makeDirsSync(dir, 0o700)
  const stats = statSync(dir, { throwIfNoEntry: false })
  if (stats !== undefined && (stats.mode & 0o777) !== 0o700) chmodSync(dir, 0o700)
}

/** How long an open is tried again while SQLite answers BUSY, and how long it waits between tries. */
const BUSY_FOR_MS = 5_000
const BUSY_RETRY: Backoff = { firstMs: 25, maxMs: 250, jitter: 'full' }

function isBusy (err: unknown): boolean {
  return String((err as { code?: unknown }).code ?? '').startsWith('SQLITE_BUSY')
}

/**
 * The local service's database: one SQLite file in its directory, opened the way every cidsync
 * file is (`util/sqlite-file.ts`: 0600 first, busy timeout before WAL, each migration under the
 * write lock with the version read again). Switching a fresh file to WAL while another process
 * holds its write lock answers BUSY at once, without the busy timeout (SQLite's deadlock
 * avoidance; two commands starting on a fresh directory do it): the open is tried again for up
 * to 5 s, waiting on a timer, never by blocking the event loop, which serves the daemon's
 * status endpoint and watches meanwhile.
 */
/** The service's database file in its directory. */
export const SERVICE_DATABASE = 'service.sqlite'

export async function openServiceDatabase (dir: string, signal?: AbortSignal): Promise<Database.Database> {
  const path = join(dir, SERVICE_DATABASE)
  tightenDir(dir)
  const deadline = Date.now() + BUSY_FOR_MS
  for (let failures = 1; ; failures++) {
    try {
      return openSqliteFile(path, {
        migrations: MIGRATIONS,
        // As before: a service's blocks table can be large, and its packs are checked as they are read.
        check: false,
        // FULL: a commit is durable when it returns. A block's row, an upload's listing record and
        // a pointer are committed before the answer that says they are stored (blocks.ts, rule 3);
        // under NORMAL a power cut could take back what was answered (a pointer set back, which a
        // client rightly takes for a lying service; a block answered stored, then not held).
        synchronous: 'FULL',
        damaged: (p, problem, cause) => new ServiceDataDamagedError(`the local service's database ${p} is damaged (${problem}): restore the service's directory from a backup, or publish again from a device that holds the files`, { cause }),
        tooNew: (p, found, known) => new SchemaTooNewError(p, found, known, 'service database')
      })
    } catch (err) {
      if (!isBusy(err) || Date.now() > deadline) throw err
      await sleep(backoffMs(BUSY_RETRY, failures), signal)
    }
  }
}

/** A setting made once and kept (the token signing secret). */
export function settingOr (db: Database.Database, key: string, make: () => string): string {
  const found = db.prepare('SELECT value FROM settings WHERE key = ?').pluck().get(key) as string | undefined
  if (found !== undefined) return found
  const value = make()
  db.prepare('INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)').run(key, value)
  return db.prepare('SELECT value FROM settings WHERE key = ?').pluck().get(key) as string
}
