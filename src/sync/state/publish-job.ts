/** Where a publish stands; each step is idempotent, so a restart resumes at the one recorded. */
export type PublishStep = 'snapshot' | 'upload' | 'deal' | 'pointer' | 'name' | 'done' | 'abandoned'

/** The steps that still have work to do, in order. */
export const ACTIVE_STEPS = ['snapshot', 'upload', 'deal', 'pointer', 'name'] as const
export type ActiveStep = typeof ACTIVE_STEPS[number]

/** The steps after `snapshot`: the job has its snapshot file, CID and marker from then on. */
export type SnapshottedStep = 'upload' | 'deal' | 'pointer' | 'name' | 'done'

interface JobCommon {
  readonly id: number
  /** The pointer's CID this device last published or restored: what "nobody else published" means. */
  readonly baseCid: string | null
  /** How many times other devices' publishes sent this job round again. */
  readonly merges: number
  /** The user's labels for the publish this job makes (`cidsync snapshot --keep`); usually none. */
  readonly marks: readonly string[]
}

/** A file a publish uploads and sends for a deal: a segment or the manifest. */
export interface PublishFile { readonly path: string, readonly cid: string, readonly bytes: number }

/** What the `snapshot` step made: the manifest (its path and CID) and every new file. */
export interface SnapshotMade {
  readonly snapshotPath: string
  readonly snapshotCid: string
  /** New segments, then the manifest: the order they are uploaded in. */
  readonly files: readonly PublishFile[]
  /** The manifest's JSON: the segment lists the index records once the pointer holds it. */
  readonly manifest: string
  /** Devices and their sequence numbers in the snapshot: unchanged means nothing to publish. */
  readonly marker: string
  readonly entries: number
}

/** A job at `snapshot` has no snapshot yet (a round sent back by a merge makes a new one). */
export interface SnapshotJob extends JobCommon {
  readonly step: 'snapshot'
  readonly snapshotPath: null
  readonly snapshotCid: null
  readonly marker: null
  readonly entries: null
  readonly files: null
  readonly manifest: null
}

/** A publish job, typed by its step: from `upload` on, its snapshot is known. */
export type PublishJob = SnapshotJob | { readonly [S in SnapshottedStep]: JobCommon & SnapshotMade & { readonly step: S } }[SnapshottedStep]

/** The job at one step. */
export type JobAt<S extends PublishJob['step']> = Extract<PublishJob, { step: S }>

/**
 * A row this version cannot go on with: a step it does not know (written by another version of
 * cidsync?) or one missing what its step needs. The publish gives it up loudly.
 */
export interface UnusableJob {
  readonly id: number
  readonly step: string
  readonly problem: string
  /** As stored, unchecked: the file is kept until the job is given up. */
  readonly snapshotPath: string | null
  readonly snapshotCid: string | null
}

/** The row as stored in `publish_jobs`. */
export interface JobRow {
  id: number, step: string, base_cid: string | null, snapshot_path: string | null, snapshot_cid: string | null
  marker: string | null, entries: number | null, merges: number, files: string | null, manifest: string | null
  marks: string | null
}

const SNAPSHOTTED: ReadonlySet<string> = new Set<SnapshottedStep>(['upload', 'deal', 'pointer', 'name', 'done'])

/** The job a row holds, or why it cannot be used. */
export function jobFromRow (row: JobRow): PublishJob | UnusableJob {
  const marks = parseMarks(row.marks)
  if (marks === undefined) return { id: row.id, step: row.step, snapshotPath: row.snapshot_path, snapshotCid: row.snapshot_cid, problem: 'holds labels that are not a list of strings (sync.sqlite damaged?)' }
  const common = { id: row.id, baseCid: row.base_cid, merges: row.merges, marks }
  if (row.step === 'snapshot') return { ...common, step: 'snapshot', snapshotPath: null, snapshotCid: null, marker: null, entries: null, files: null, manifest: null }
  const stored = { id: row.id, step: row.step, snapshotPath: row.snapshot_path, snapshotCid: row.snapshot_cid }
  if (!SNAPSHOTTED.has(row.step)) return { ...stored, problem: `has the unknown step "${row.step}" (sync.sqlite written by another version of cidsync?)` }
  if (row.snapshot_path === null || row.snapshot_cid === null || row.marker === null) {
    return { ...stored, problem: `is at step "${row.step}" without the snapshot it needs (sync.sqlite written by another version of cidsync?)` }
  }
  const files = parseFiles(row.files)
  if (files === undefined || row.manifest === null) {
    return { ...stored, problem: `is at step "${row.step}" without the segments and manifest a cidsync-sqlite/2 publish needs (started by an older cidsync?)` }
  }
  return { ...common, step: row.step as SnapshottedStep, snapshotPath: row.snapshot_path, snapshotCid: row.snapshot_cid, marker: row.marker, entries: row.entries ?? 0, files, manifest: row.manifest }
}

function parseMarks (json: string | null): string[] | undefined {
  if (json === null) return []
  try {
    const marks = JSON.parse(json) as unknown
    return Array.isArray(marks) && marks.every(m => typeof m === 'string') ? marks as string[] : undefined
  } catch {
    return undefined
  }
}

function parseFiles (json: string | null): PublishFile[] | undefined {
  if (json === null) return undefined
  try {
    const files = JSON.parse(json) as unknown
    if (!Array.isArray(files) || !files.every(f => typeof f?.path === 'string' && typeof f?.cid === 'string' && Number.isSafeInteger(f?.bytes))) return undefined
    return files as PublishFile[]
  } catch {
    return undefined
  }
}

/** The files an unfinished job resumes from (kept when leftovers are removed): its manifest and segments. */
export function jobFiles (job: PublishJob | UnusableJob | undefined): string[] {
  if (job === undefined) return []
  const files = 'files' in job && job.files !== null ? job.files.map(f => f.path) : []
  return [job.snapshotPath, ...files].filter((path): path is string => path !== null)
}
