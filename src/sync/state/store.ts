import type { Statement } from 'better-sqlite3'
import { jobFromRow, type JobAt, type JobRow, type PublishJob, type SnapshotMade, type UnusableJob } from './publish-job.js'
import { damaged, SyncState } from './database.js'
import { KEEP_RESTORES, KEY } from './keys.js'
import type { AbandonedUpload } from './abandoned-uploads.js'

export type { IpnsPublished, LastPublished, Refusal, RestoreRecord } from './keys.js'

/** A job's columns, as written. */
type JobFields = Omit<{ readonly [K in keyof PublishJob]: PublishJob[K] | null }, 'step' | 'id' | 'merges'> & { readonly id: number, readonly merges: number }

/**
 * This device's sync progress, in `sync.sqlite` beside the index (never in a snapshot): the
 * publish job in flight, and (from {@link SyncState}) what was last published, restored and
 * seen. Opened once per process by its owner (the daemon hands it down; a CLI command opens it
 * for its run), statements prepared once, and each change a step makes written in one transaction.
 */
export class SyncStore extends SyncState {
  private readonly jobs: Record<'current' | 'get' | 'insert' | 'update' | 'abandon' | 'failed', Statement>

  constructor (stateDir: string) {
    super(stateDir)
    try {
      this.jobs = {
        current: this.db.prepare("SELECT * FROM publish_jobs WHERE step NOT IN ('done', 'abandoned') ORDER BY id DESC LIMIT 1"),
        get: this.db.prepare('SELECT * FROM publish_jobs WHERE id = ?'),
        insert: this.db.prepare("INSERT INTO publish_jobs (step, base_cid, marks, created_at, updated_at) VALUES ('snapshot', ?, ?, ?, ?)"),
        update: this.db.prepare(`UPDATE publish_jobs SET step = @step, base_cid = @baseCid, snapshot_path = @snapshotPath, snapshot_cid = @snapshotCid,
          marker = @marker, entries = @entries, merges = @merges, files = @files, manifest = @manifest, error = NULL, updated_at = @now WHERE id = @id`),
        abandon: this.db.prepare("UPDATE publish_jobs SET step = 'abandoned', error = ?, updated_at = ? WHERE id = ?"),
        failed: this.db.prepare('UPDATE publish_jobs SET error = ?, updated_at = ? WHERE id = ?')
      }
    } catch (err) {
      const path = this.db.name
      this.db.close()
      throw damaged(path, err)
    }
  }

  /** The unfinished job, if a publish was cut short (or why the one on disk cannot go on). */
  current (): PublishJob | UnusableJob | undefined {
    const row = this.jobs.current.get() as JobRow | undefined
    return row === undefined ? undefined : jobFromRow(row)
  }

  /** A new job on top of `baseCid`; `marks` are the labels its manifest carries, kept until it is done. */
  start (baseCid: string | null, marks: readonly string[] = []): JobAt<'snapshot'> {
    const now = Date.now()
    return this.job(Number(this.jobs.insert.run(baseCid, marks.length === 0 ? null : JSON.stringify(marks), now, now).lastInsertRowid)) as JobAt<'snapshot'>
  }

  /** `snapshot` done: the file, its CID, marker and entries; next `upload`. */
  /**
   * The attempt's files are written. One an earlier attempt left (sealed alike: the same CID) is
   * this attempt's now, and no longer left for a prune: in the same transaction.
   */
  snapshotted (job: JobAt<'snapshot'>, made: SnapshotMade): JobAt<'upload'> {
    return this.db.transaction(() => {
      this.abandonedUploads.forget(made.files.map(f => f.cid))
      return this.advance({ ...job, ...made, step: 'upload' })
    }).immediate()
  }

  uploaded (job: JobAt<'upload'>): JobAt<'deal'> {
    return this.advance({ ...job, step: 'deal' })
  }

  dealt (job: JobAt<'deal'>): JobAt<'pointer'> {
    return this.advance({ ...job, step: 'pointer' })
  }

  /**
   * The pointer moved on since `baseCid`, and that snapshot was merged: a new snapshot, counted.
   * What this attempt uploaded is left, noted for a prune in the same transaction.
   */
  merged (job: JobAt<'pointer'>, baseCid: string): JobAt<'snapshot'> {
    return this.db.transaction(() => {
      this.abandonedUploads.note(uploadsOf(job))
      return this.advance({ ...job, step: 'snapshot', baseCid, merges: job.merges + 1 })
    }).immediate()
  }

  /** Gives up a job whose attempt was uploaded (contended too long): what it uploaded is noted for a prune. */
  abandonUploaded (job: JobAt<'pointer'>, why: string): void {
    this.db.transaction(() => {
      this.abandonedUploads.note(uploadsOf(job))
      this.abandon(job.id, why)
    }).immediate()
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
    }).immediate()
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
    }).immediate()
  }

  /** Gives a job up (its step unknown, or contended too long): the next publish starts over. */
  abandon (id: number, why: string): void {
    this.jobs.abandon.run(why, Date.now(), id)
  }

  failed (id: number, error: string): void {
    this.jobs.failed.run(error, Date.now(), id)
  }

  /** Nothing changed here; the pointer's newer snapshot was merged: it is the base, and our marker moves. */
  pulled (cid: string, marker: string, at = new Date()): void {
    this.db.transaction(() => {
      this.setValue(KEY.base, cid)
      this.notePointer(cid, at)
      this.setValue(KEY.lastMarker, marker)
    }).immediate()
  }

  /**
   * A forget on this device linked the chain anew: the pointer holds `to` in place of `from`, with
   * the same rows. A base or a last publish that was `from` is `to` now, so status and the next
   * publish see no other device's publish to merge.
   */
  relinked (from: string, to: string, at = new Date()): void {
    this.db.transaction(() => {
      if (this.base() === from) this.setValue(KEY.base, to)
      // Status names this device's last publish as the history now lists it.
      if (this.value(KEY.lastCid) === from) this.setValue(KEY.lastCid, to)
      this.notePointer(to, at)
    }).immediate()
  }

  /**
   * A restore installed `cid`: it is the base, and the restore is remembered for status.
   * `pointer`: what the primary's pointer held when the restore read it, now the last known one.
   */
  restored (cid: string, seconds: number, pointer?: string, at = new Date()): void {
    this.db.transaction(() => {
      this.setValue(KEY.base, cid)
      if (pointer !== undefined) this.notePointer(pointer, at)
      const history = [...this.restores(), { at: at.toISOString(), seconds }]
      this.setValue(KEY.restores, JSON.stringify(history.slice(-KEEP_RESTORES)))
    }).immediate()
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
    }).immediate()
  }

  /** Writes the job's row as given (error cleared) and reads it back, typed by its new step. */
  private advance<S extends PublishJob['step']> (job: JobFields & { readonly step: S }): JobAt<S> {
    this.jobs.update.run({
      id: job.id, step: job.step, baseCid: job.baseCid, snapshotPath: job.snapshotPath, snapshotCid: job.snapshotCid,
      marker: job.marker, entries: job.entries, merges: job.merges, files: job.files === null ? null : JSON.stringify(job.files), manifest: job.manifest, now: Date.now()
    })
    return this.job(job.id) as JobAt<S>
  }

  private job (id: number): PublishJob | UnusableJob {
    return jobFromRow(this.jobs.get.get(id) as JobRow)
  }
}

/** The manifest and segments a snapshotted job's attempt uploaded. */
function uploadsOf (job: JobAt<'pointer'>): AbandonedUpload[] {
  return job.files.map(f => ({ cid: f.cid, kind: f.cid === job.snapshotCid ? 'manifest' : 'segment' }))
}
