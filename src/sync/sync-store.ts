import { join } from 'node:path'
import type Database from 'better-sqlite3'
import type { Statement } from 'better-sqlite3'
import { SchemaTooNewError, SyncStateDamagedError } from '../errors.js'
import { isDamageError, openSqliteFile } from '../util/sqlite-file.js'
import { jobFromRow, type JobAt, type JobRow, type PublishJob, type SnapshotMade, type UnusableJob } from './publish-job.js'
import { SYNC_MIGRATIONS } from './sync-migrations.js'
import { MirrorLog } from './mirror-log.js'
import { SYNC_STATE_FILE } from './sync-state-file.js'
import { KEEP_RESTORES, KEY, type IpnsPublished, type Key, type LastPublished, type Refusal, type RestoreRecord } from './sync-state-keys.js'

export type { IpnsPublished, LastPublished, Refusal, RestoreRecord } from './sync-state-keys.js'

/** A job's columns, as written. */
type JobFields = Omit<{ readonly [K in keyof PublishJob]: PublishJob[K] | null }, 'step' | 'id' | 'merges'> & { readonly id: number, readonly merges: number }

function partsKey (cid: string, keyId: string): string {
  return `content-parts/${keyId}/${cid}`
}

function damaged (path: string, err: unknown): unknown {
  return isDamageError(err) ? new SyncStateDamagedError(path, (err as Error).message, { cause: err }) : err
}

/**
 * This device's sync progress, in `sync.sqlite` beside the index (never in a snapshot): the
 * publish job in flight and what was last published, restored and seen. Opened once per process
 * (the daemon passes it down; a CLI command opens it for its run), statements prepared once, and
 * each change a step makes written in one transaction.
 */
export class SyncStore {
  private readonly db: Database.Database
  private readonly s: Record<'current' | 'get' | 'insert' | 'update' | 'abandon' | 'failed' | 'value' | 'setValue', Statement>

  /** The file, 0600 (its `-wal` and `-shm` too). One that is not a database throws `SyncStateDamagedError`. */
  constructor (stateDir: string) {
    const path = join(stateDir, SYNC_STATE_FILE)
    // FULL: each publish step is recorded before the next begins, and must survive a power cut too.
    this.db = openSqliteFile(path, {
      migrations: SYNC_MIGRATIONS,
      check: false,
      synchronous: 'FULL',
      damaged: (p, message, cause) => new SyncStateDamagedError(p, message, cause === undefined ? undefined : { cause }),
      tooNew: (p, found, known) => new SchemaTooNewError(p, found, known, 'sync state')
    })
    try {
      this.s = {
        current: this.db.prepare("SELECT * FROM publish_jobs WHERE step NOT IN ('done', 'abandoned') ORDER BY id DESC LIMIT 1"),
        get: this.db.prepare('SELECT * FROM publish_jobs WHERE id = ?'),
        insert: this.db.prepare("INSERT INTO publish_jobs (step, base_cid, created_at, updated_at) VALUES ('snapshot', ?, ?, ?)"),
        update: this.db.prepare(`UPDATE publish_jobs SET step = @step, base_cid = @baseCid, snapshot_path = @snapshotPath, snapshot_cid = @snapshotCid,
          marker = @marker, entries = @entries, merges = @merges, files = @files, manifest = @manifest, error = NULL, updated_at = @now WHERE id = @id`),
        abandon: this.db.prepare("UPDATE publish_jobs SET step = 'abandoned', error = ?, updated_at = ? WHERE id = ?"),
        failed: this.db.prepare('UPDATE publish_jobs SET error = ?, updated_at = ? WHERE id = ?'),
        value: this.db.prepare('SELECT value FROM sync_state WHERE key = ?').pluck(),
        setValue: this.db.prepare('INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
      }
    } catch (err) {
      this.db.close()
      throw damaged(path, err)
    }
  }

  /** `PRAGMA quick_check`: throws `SyncStateDamagedError` when the file's pages do not add up. */
  check (): void {
    const path = this.db.name
    let result: unknown
    try {
      result = this.db.pragma('quick_check(1)', { simple: true })
    } catch (err) {
      throw damaged(path, err)
    }
    if (result !== 'ok') throw new SyncStateDamagedError(path, `quick_check: ${String(result)}`)
  }

  close (): void {
    if (this.db.open) this.db.close()
  }

  // Reads.

  /** The unfinished job, if a publish was cut short (or why the one on disk cannot go on). */
  current (): PublishJob | UnusableJob | undefined {
    const row = this.s.current.get() as JobRow | undefined
    return row === undefined ? undefined : jobFromRow(row)
  }

  /** The pointer CID this device last published or restored ('' once forgotten: merge before any PUT). */
  base (): string | undefined {
    return this.value(KEY.base)
  }

  lastPublished (): LastPublished | undefined {
    const cid = this.value(KEY.lastCid)
    if (cid === undefined) return undefined
    const own = this.value(KEY.lastOwnEntries)
    return {
      cid,
      marker: this.value(KEY.lastMarker) ?? null,
      at: this.value(KEY.lastAt) ?? null,
      entries: Number(this.value(KEY.lastEntries) ?? 0),
      ownEntries: own === undefined || Number.isNaN(Number(own)) ? null : Number(own)
    }
  }

  /** What the pointer held when last looked at ('' for nothing stored), and when; undefined before the first look. */
  remotePointer (): { readonly cid: string, readonly at: string | null } | undefined {
    const cid = this.value(KEY.remotePointer)
    return cid === undefined ? undefined : { cid, at: this.value(KEY.remotePointerAt) ?? null }
  }

  /** Restores into this state dir, oldest first (the last {@link KEEP_RESTORES}). */
  restores (): RestoreRecord[] {
    return JSON.parse(this.value(KEY.restores) ?? '[]') as RestoreRecord[]
  }

  /** Whether this device has published or merged a manifest bound to its namespace (docs/snapshot-format.md, "Namespace binding"). */
  boundSeen (): boolean {
    return this.value(KEY.boundSeen) === '1'
  }

  noteBound (): void {
    if (!this.boundSeen()) this.setValue(KEY.boundSeen, '1')
  }

  /** The furthest own sequence this device put behind the pointer, if it was this device id's. */
  ownSeq (deviceId: string): number | undefined {
    try {
      const value = JSON.parse(this.value(KEY.ownSeq) ?? 'null') as { deviceId?: unknown, seq?: unknown } | null
      return value?.deviceId === deviceId && typeof value.seq === 'number' ? value.seq : undefined
    } catch {
      return undefined
    }
  }

  noteOwnSeq (deviceId: string, seq: number): void {
    if ((this.ownSeq(deviceId) ?? -1) < seq) this.setValue(KEY.ownSeq, JSON.stringify({ deviceId, seq }))
  }

  /** What the last merge refused of the pointer's publish (null: nothing). */
  refused (): Refusal | null {
    return this.refusal(KEY.refused)
  }

  noteRefused (refusal: Refusal | null): void {
    this.setValue(KEY.refused, refusal === null ? '' : JSON.stringify(refusal))
  }

  /** The last time the pointer was found without this device's last publish (rolled back). */
  rollback (): Refusal | null {
    return this.refusal(KEY.rollback)
  }

  noteRollback (refusal: Refusal): void {
    this.setValue(KEY.rollback, JSON.stringify(refusal))
  }

  private refusal (key: Key): Refusal | null {
    try {
      const value = JSON.parse(this.value(key) || 'null') as Refusal | null
      return value !== null && typeof value.message === 'string' ? value : null
    } catch {
      return null
    }
  }

  /** The IPNS key made for `ipns_key = "auto"`, once made. */
  ipnsKey (): { readonly name: string, readonly id: string | undefined } | undefined {
    const name = this.value(KEY.ipnsKey)
    return name === undefined ? undefined : { name, id: this.value(KEY.ipnsId) }
  }

  // Publish job steps: each one transaction.

  start (baseCid: string | null): JobAt<'snapshot'> {
    const now = Date.now()
    return this.job(Number(this.s.insert.run(baseCid, now, now).lastInsertRowid)) as JobAt<'snapshot'>
  }

  /** `snapshot` done: the file, its CID, marker and entries; next `upload`. */
  snapshotted (job: JobAt<'snapshot'>, made: SnapshotMade): JobAt<'upload'> {
    return this.advance({ ...job, ...made, step: 'upload' })
  }

  uploaded (job: JobAt<'upload'>): JobAt<'deal'> {
    return this.advance({ ...job, step: 'deal' })
  }

  dealt (job: JobAt<'deal'>): JobAt<'pointer'> {
    return this.advance({ ...job, step: 'pointer' })
  }

  /** The pointer moved on since `baseCid`, and that snapshot was merged: a new snapshot, counted. */
  merged (job: JobAt<'pointer'>, baseCid: string): JobAt<'snapshot'> {
    return this.advance({ ...job, step: 'snapshot', baseCid, merges: job.merges + 1 })
  }

  /** Another device's PUT came between ours and the read back: the pointer step again, counted. */
  outrun (job: JobAt<'pointer'>): JobAt<'pointer'> {
    return this.advance({ ...job, merges: job.merges + 1 })
  }

  /** The pointer holds our snapshot: it is the base, and what the pointer was last seen holding; next `name`. */
  pointerPut (job: JobAt<'pointer'>, at = new Date()): JobAt<'name'> {
    return this.db.transaction(() => {
      this.setValue(KEY.base, job.snapshotCid)
      this.notePointer(job.snapshotCid, at)
      return this.advance({ ...job, step: 'name', baseCid: job.snapshotCid })
    })()
  }

  /** The publish is done: what was published is recorded with the job's end. */
  finishPublish (job: JobAt<'name'>, done: { readonly ownEntries: number, readonly at?: Date, readonly replicate?: { readonly segments: readonly string[], readonly profile: string } }): JobAt<'done'> {
    return this.db.transaction(() => {
      // In the same transaction: a publish done is a publish every mirror will get.
      if (done.replicate !== undefined) this.mirrorLog.logPublish(job.snapshotCid, done.replicate.segments, done.replicate.profile)
      this.setValue(KEY.lastCid, job.snapshotCid)
      this.setValue(KEY.lastMarker, job.marker)
      this.setValue(KEY.lastAt, (done.at ?? new Date()).toISOString())
      this.setValue(KEY.lastEntries, String(job.entries))
      this.setValue(KEY.lastOwnEntries, String(done.ownEntries))
      return this.advance({ ...job, step: 'done' })
    })()
  }

  /** Gives a job up (its step unknown, or contended too long): the next publish starts over. */
  abandon (id: number, why: string): void {
    this.s.abandon.run(why, Date.now(), id)
  }

  failed (id: number, error: string): void {
    this.s.failed.run(error, Date.now(), id)
  }

  // Other state changes, each one transaction.

  /** Nothing changed here; the pointer's newer snapshot was merged: it is the base, and our marker moves. */
  pulled (cid: string, marker: string, at = new Date()): void {
    this.db.transaction(() => {
      this.setValue(KEY.base, cid)
      this.notePointer(cid, at)
      this.setValue(KEY.lastMarker, marker)
    })()
  }

  /** What the pointer holds now ('' for nothing stored). */
  notePointer (cid: string, at = new Date()): void {
    this.db.transaction(() => {
      this.setValue(KEY.remotePointer, cid)
      this.setValue(KEY.remotePointerAt, at.toISOString())
    })()
  }

  /** The pointer could not be read: only when it was looked at. */
  notePointerLookedAt (at = new Date()): void {
    this.setValue(KEY.remotePointerAt, at.toISOString())
  }

  /** The IPNS name last published to; undefined before the first (or when unreadable: it is only shown). */
  ipnsPublished (): IpnsPublished | undefined {
    try {
      const value = JSON.parse(this.value(KEY.ipnsPublished) ?? 'null') as IpnsPublished | null
      return value === null || typeof value.name !== 'string' || typeof value.id !== 'string' ? undefined : value
    } catch {
      return undefined
    }
  }

  noteIpnsPublished (name: string, id: string, cid: string, at = new Date()): void {
    this.setValue(KEY.ipnsPublished, JSON.stringify({ name, id, cid, at: at.toISOString() } satisfies IpnsPublished))
  }

  setIpnsKey (name: string, id: string): void {
    this.db.transaction(() => {
      this.setValue(KEY.ipnsKey, name)
      this.setValue(KEY.ipnsId, id)
    })()
  }

  /** A restore installed `cid`: it is the base, and the restore is remembered for status. */
  restored (cid: string, seconds: number, at = new Date()): void {
    this.db.transaction(() => {
      this.setValue(KEY.base, cid)
      const history = [...this.restores(), { at: at.toISOString(), seconds }]
      this.setValue(KEY.restores, JSON.stringify(history.slice(-KEEP_RESTORES)))
    })()
  }

  /**
   * The index this device published from was lost: forget what "nobody else published" meant
   * (the base, the last marker, the unfinished job's base), so the next publish merges the
   * pointer's snapshot before it PUTs.
   */
  forgetBase (): void {
    this.db.transaction(() => {
      this.setValue(KEY.base, '')
      this.setValue(KEY.lastMarker, '')
      const job = this.current()
      if (job !== undefined && 'baseCid' in job) this.advance({ ...job, baseCid: '' })
    })()
  }

  // cidsync-sqlite/2: manifests already read, and restore drills.

  /** Manifests are immutable (named by their CID): each one read is kept here and never fetched again. */
  get manifestCache (): { get: (cid: string) => string | undefined, put: (cid: string, json: string) => void } {
    if (this.manifestCacheAccess === undefined) {
      const get = this.db.prepare('SELECT body FROM manifest_cache WHERE cid = ?').pluck()
      const put = this.db.prepare('INSERT INTO manifest_cache (cid, body, cached_at) VALUES (?, ?, ?) ON CONFLICT (cid) DO NOTHING')
      this.manifestCacheAccess = {
        get: (cid) => get.get(cid) as string | undefined,
        put: (cid, json) => { put.run(cid, json, Date.now()) }
      }
    }
    return this.manifestCacheAccess
  }

  private manifestCacheAccess?: { get: (cid: string) => string | undefined, put: (cid: string, json: string) => void }

  /** cidsync-sqlite/3: what to replicate to mirrors, and where each mirror is (mirror-log.ts). */
  get mirrorLog (): MirrorLog {
    this.mirrorLogAccess ??= new MirrorLog(this.db)
    return this.mirrorLogAccess
  }

  private mirrorLogAccess?: MirrorLog

  /** The last restore drill (JSON as the drill answered it) and when one last succeeded. */
  lastVerify (): { readonly result: string | undefined, readonly lastSuccessAt: string | undefined } {
    return { result: this.value(KEY.lastVerify), lastSuccessAt: this.value(KEY.lastVerifySuccess) }
  }

  verified (result: { readonly restorable: boolean, readonly checkedAt: string }): void {
    this.db.transaction(() => {
      this.setValue(KEY.lastVerify, JSON.stringify(result))
      if (result.restorable) this.setValue(KEY.lastVerifySuccess, result.checkedAt)
    })()
  }

  /** Parts of a large file that an interrupted run already stored: a resumed run sends only the rest. */
  contentParts (cid: string, keyId: string): Map<number, string> {
    const json = this.s.value.get(partsKey(cid, keyId)) as string | undefined
    return new Map(json === undefined ? [] : JSON.parse(json) as Array<[number, string]>)
  }

  contentPartStored (cid: string, keyId: string, index: number, object: string): void {
    this.db.transaction(() => {
      const parts = this.contentParts(cid, keyId).set(index, object)
      this.s.setValue.run(partsKey(cid, keyId), JSON.stringify([...parts]))
    }).immediate()
  }

  /** Files whose content failed to store, as the daemon's last pass left them (JSON, read by `cidsync ls`). */
  contentFailures (): string | undefined {
    return this.value(KEY.contentFailures)
  }

  noteContentFailures (failures: readonly unknown[]): void {
    this.setValue(KEY.contentFailures, JSON.stringify(failures))
  }

  /** The pointer CID whose records storing last merged before uploading (content-pull.ts). */
  contentPulled (): string | undefined {
    return this.value(KEY.contentPulled)
  }

  noteContentPulled (cid: string): void {
    this.setValue(KEY.contentPulled, cid)
  }

  /** Once the file's record is in the index, its parts are no longer in flight. */
  forgetContentParts (cid: string, keyId: string): void {
    this.db.prepare('DELETE FROM sync_state WHERE key = ?').run(partsKey(cid, keyId))
  }

  /** Writes the job's row as given (error cleared) and reads it back, typed by its new step. */
  private advance<S extends PublishJob['step']> (job: JobFields & { readonly step: S }): JobAt<S> {
    this.s.update.run({
      id: job.id, step: job.step, baseCid: job.baseCid, snapshotPath: job.snapshotPath, snapshotCid: job.snapshotCid,
      marker: job.marker, entries: job.entries, merges: job.merges, files: job.files === null ? null : JSON.stringify(job.files), manifest: job.manifest, now: Date.now()
    })
    return this.job(job.id) as JobAt<S>
  }

  private job (id: number): PublishJob | UnusableJob {
    return jobFromRow(this.s.get.get(id) as JobRow)
  }

  private value (key: Key): string | undefined {
    return this.s.value.get(key) as string | undefined
  }

  private setValue (key: Key, value: string): void {
    this.s.setValue.run(key, value)
  }

}
