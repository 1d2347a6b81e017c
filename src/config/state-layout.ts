import { join } from 'node:path'

/**
 * Every file and folder cidsync keeps in a state dir, named in one place. Each room takes its
 * names from here; docs/configuration.md ("Files in the state dir") lists each one, and a test
 * checks it does.
 */
export const STATE_NAMES = {
  /** The index (SQLite). */
  index: 'index.sqlite',
  /** This device's sync progress (SQLite), never in a snapshot. */
  syncState: 'sync.sqlite',
  /** This device's random id. */
  deviceId: 'device-id',
  /** The snapshot encryption key. */
  snapshotKey: 'snapshot.key',
  /** The scrypt salt of a key from the passphrase. */
  snapshotSalt: 'snapshot.salt',
  /** Held while a daemon runs. */
  daemonLock: 'daemon.lock',
  /** The running daemon's pid, host, start time and status address. */
  daemonInfo: 'daemon.json',
  /** The token POSTs to the status endpoint need. */
  statusToken: 'status.token',
  /** The address of the embedded service's account this state dir uses: a dir holding another is refused. */
  embeddedAccount: 'embedded-account',
  /** The session token the daemon renewed with the wallet key. */
  renewedSessionToken: 'renewed-session-token',
  /** `find`'s search cache (SQLite), made again when lost. */
  searchCache: 'search.sqlite',
  /** `find --at` and `log`'s rows of the history (SQLite), made again when lost. */
  historyRows: 'history-rows.sqlite',
  /** Snapshot files while a publish, merge or restore is under way. */
  snapshots: 'snapshots',
  /** Past publishes' indexes `get --at`, `restore --files --at` and `find --at` read. */
  past: 'past',
  /** Content objects fetched while files are brought back. */
  contentFetch: 'content-fetch',
  /** Sealed objects written while content is stored. */
  contentSpool: 'content-spool',
  /** Each mirror's credentials, one folder a mirror. */
  mirrors: 'mirrors',
  /** The embedded service's data, unless `[service] dir` names another. */
  service: 'service'
} as const

export type StateName = keyof typeof STATE_NAMES

/** The path of `name` in `stateDir`. */
export function statePath (stateDir: string, name: StateName): string {
  return join(stateDir, STATE_NAMES[name])
}
