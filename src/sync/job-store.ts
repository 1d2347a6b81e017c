import { join } from 'node:path'
import Database from 'better-sqlite3'
import { SyncStateDamagedError } from '../errors.js'
import { isDamageError } from '../index/index.js'
import { preparePrivateDatabase } from '../util/private-file.js'
import { SYNC_STATE_FILE } from './sync-state-file.js'

/** Where a publish stands; each step is idempotent, so a restart resumes at the one recorded. */
export type PublishStep = 'snapshot' | 'upload' | 'deal' | 'pointer' | 'name' | 'done' | 'abandoned'

/** The steps that still have work to do, in order. */
export const ACTIVE_STEPS = ['snapshot', 'upload', 'deal', 'pointer', 'name'] as const
export type ActiveStep = typeof ACTIVE_STEPS[number]

export interface PublishJob {
  readonly id: number
  readonly step: PublishStep
  /** The pointer's CID this device last published or restored: what "nobody else published" means. */
  readonly baseCid: string | null
  readonly snapshotPath: string | null
  readonly snapshotCid: string | null
  /** Devices and their sequence numbers in the snapshot: unchanged means nothing to publish. */
  readonly marker: string | null
  readonly entries: number | null
  readonly merges: number
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS publish_jobs (id INTEGER PRIMARY KEY, step TEXT NOT NULL, base_cid TEXT, snapshot_path TEXT,
    snapshot_cid TEXT, marker TEXT, entries INTEGER, merges INTEGER NOT NULL DEFAULT 0, error TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
  CREATE TABLE IF NOT EXISTS sync_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;`

interface Row { id: number, step: PublishStep, base_cid: string | null, snapshot_path: string | null, snapshot_cid: string | null, marker: string | null, entries: number | null, merges: number }

/**
 * This device's sync progress, in `sync.sqlite` beside the index (never in a snapshot): the
 * publish job in flight and what was last published or restored.
 */
export class JobStore {
  private readonly db: Database.Database

  /** The file, 0600 (its `-wal` and `-shm` too). One that is not a database throws `SyncStateDamagedError`. */
  constructor (stateDir: string) {
    const path = join(stateDir, SYNC_STATE_FILE)
    preparePrivateDatabase(path)
    try {
      this.db = new Database(path)
    } catch (err) {
      throw isDamageError(err) ? new SyncStateDamagedError(path, (err as Error).message, { cause: err }) : err
    }
    try {
      this.db.pragma('journal_mode = WAL')
      this.db.pragma('busy_timeout = 5000')
      this.db.exec(SCHEMA)
    } catch (err) {
      this.db.close()
      throw isDamageError(err) ? new SyncStateDamagedError(path, (err as Error).message, { cause: err }) : err
    }
  }

  /** `PRAGMA quick_check`: throws `SyncStateDamagedError` when the file's pages do not add up. */
  check (): void {
    const path = this.db.name
    let result: unknown
    try {
      result = this.db.pragma('quick_check(1)', { simple: true })
    } catch (err) {
      throw isDamageError(err) ? new SyncStateDamagedError(path, (err as Error).message, { cause: err }) : err
    }
    if (result !== 'ok') throw new SyncStateDamagedError(path, `quick_check: ${String(result)}`)
  }

  /** The unfinished job, if a publish was cut short. */
  current (): PublishJob | undefined {
    const row = this.db.prepare("SELECT * FROM publish_jobs WHERE step NOT IN ('done', 'abandoned') ORDER BY id DESC LIMIT 1").get() as Row | undefined
    return row === undefined ? undefined : toJob(row)
  }

  start (baseCid: string | null): PublishJob {
    const now = Date.now()
    const id = Number(this.db.prepare("INSERT INTO publish_jobs (step, base_cid, created_at, updated_at) VALUES ('snapshot', ?, ?, ?)").run(baseCid, now, now).lastInsertRowid)
    return this.get(id)
  }

  /** Records the next step and what the last one produced, in one write. */
  advance (id: number, step: PublishStep, fields: Partial<Pick<PublishJob, 'baseCid' | 'snapshotPath' | 'snapshotCid' | 'marker' | 'entries' | 'merges'>> = {}): PublishJob {
    const job = this.get(id)
    this.db.prepare('UPDATE publish_jobs SET step = ?, base_cid = ?, snapshot_path = ?, snapshot_cid = ?, marker = ?, entries = ?, merges = ?, error = NULL, updated_at = ? WHERE id = ?').run(
      step, fields.baseCid ?? job.baseCid, fields.snapshotPath ?? job.snapshotPath, fields.snapshotCid ?? job.snapshotCid,
      fields.marker ?? job.marker, fields.entries ?? job.entries, fields.merges ?? job.merges, Date.now(), id)
    return this.get(id)
  }

  /** Gives a job up (its step unknown, or contended too long): the next publish starts over. */
  abandon (id: number, why: string): void {
    this.db.prepare("UPDATE publish_jobs SET step = 'abandoned', error = ?, updated_at = ? WHERE id = ?").run(why, Date.now(), id)
  }

  failed (id: number, error: string): void {
    this.db.prepare('UPDATE publish_jobs SET error = ?, updated_at = ? WHERE id = ?').run(error, Date.now(), id)
  }

  value (key: string): string | undefined {
    return this.db.prepare('SELECT value FROM sync_state WHERE key = ?').pluck().get(key) as string | undefined
  }

  setValue (key: string, value: string): void {
    this.db.prepare('INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value)
  }

  close (): void {
    this.db.close()
  }

  private get (id: number): PublishJob {
    return toJob(this.db.prepare('SELECT * FROM publish_jobs WHERE id = ?').get(id) as Row)
  }
}

function toJob (row: Row): PublishJob {
  return { id: row.id, step: row.step, baseCid: row.base_cid, snapshotPath: row.snapshot_path, snapshotCid: row.snapshot_cid, marker: row.marker, entries: row.entries, merges: row.merges }
}

/** Keys of `sync_state`. */
export const STATE = {
  /** The pointer CID this device last published or restored. */
  base: 'base_cid',
  lastMarker: 'last_published_marker',
  lastCid: 'last_published_cid',
  lastAt: 'last_published_at',
  lastEntries: 'last_published_entries',
  /** What the pointer held when last looked at, and when. */
  remotePointer: 'remote_pointer_cid',
  remotePointerAt: 'remote_pointer_at',
  /** Restores into this state dir: JSON list of `{at, seconds}`, the last 100. */
  restores: 'restores',
  /** The IPNS key made for `ipns_key = "auto"`. */
  ipnsKey: 'ipns_key_name',
  /** This device's own live entries in its last published snapshot: a publish that drops many is held. */
  lastOwnEntries: 'last_published_own_entries',
  ipnsId: 'ipns_key_id'
} as const
