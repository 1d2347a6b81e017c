import type { Database as Db } from 'better-sqlite3'
import type { Worker } from 'node:worker_threads'
import { IndexDamagedError, SnapshotFormatError, SnapshotIntegrityError } from '../errors.js'
import { LEAN_CACHE_KIB, openDatabase } from './open.js'
import { SCHEMA_VERSION } from './migrations.js'
import { segmentSchemaProblems } from './segment-schema.js'
import { hasLiveCounts } from './entries.js'
import type { SegmentRange } from './segment-types.js'
import { UNSAFE_FOLDERS, UNSAFE_PATH, UNSAFE_PATHS, UNSAFE_ROW } from './unsafe-paths.js'
import { startWorker } from '../util/start-worker.js'
import type { CheckAnswer, CheckJob } from './segment-check-worker.js'

type Range = SegmentRange & { readonly entries: number }

/**
 * Checks a segment database against what its sealed header and the manifest say: SQLite's quick
 * check, a schema this cidsync knows, only that device's rows, sequences inside the range, the
 * count as announced, every path inside its folder. A failure names the segment.
 */
export function checkSegment (path: string, range: Range, name: string): void {
  const problems = reading(path, name, (db) => {
    const quick = String(db.pragma('quick_check(1)', { simple: true }))
    if (quick !== 'ok') throw damaged(name, quick)
    return rowProblems(db, range)
  })
  refuse(name, problems)
}

/**
 * {@link checkSegment} for a large segment (a base of many rows), answering when done. SQLite's
 * quick check runs on a thread of its own while this thread walks the rows. So a restore's largest
 * base is checked in about the time of the longer of the two. The walk is not split over more
 * threads: the rows decoded twice cost more CPU than that saves on a busy machine.
 */
export async function checkSegmentAsync (path: string, range: Range, name: string, parallelFrom = PARALLEL_CHECK_ENTRIES): Promise<void> {
  if (range.entries < parallelFrom) { checkSegment(path, range, name); return }
  const quick = onThread(path, 'PRAGMA quick_check(1)')
  try {
    let walked: unknown
    let problems: string[] = []
    try {
      problems = reading(path, name, (db) => rowProblems(db, range))
    } catch (err) {
      walked = err
    }
    const checked = await quick.answer
    // A damaged file is named as such first: the walk may have failed only because of it.
    if (!checked.ok) throw new SnapshotIntegrityError(`segment ${name} cannot be read as a database: ${checked.message}`)
    if (checked.result !== 'ok') throw damaged(name, checked.result)
    if (walked !== undefined) throw walked
    refuse(name, problems)
  } finally {
    await quick.stop()
  }
}

/** Below this many rows a segment is checked on this thread alone (a thread costs more than it saves). */
export const PARALLEL_CHECK_ENTRIES = 100_000

/**
 * One read-only statement over the file on a thread of its own, with a small cache: it reads each
 * page about once, and several bases are checked at once. A failure comes as an answer, never as
 * a rejection left unhandled.
 */
function onThread (path: string, sql: string): { readonly answer: Promise<CheckAnswer>, readonly stop: () => Promise<number> } {
  const worker: Worker = startWorker(import.meta.url, 'segment-check-worker', { workerData: { path, sql, cacheKiB: LEAN_CACHE_KIB } satisfies CheckJob })
  const answer = new Promise<CheckAnswer>((resolve) => {
    worker.once('message', resolve)
    worker.once('error', (err) => { resolve({ ok: false, message: `its checking thread failed: ${err.message}` }) })
    worker.once('exit', (code) => { resolve({ ok: false, message: `its checking thread exited (${code}) without an answer` }) })
  })
  return { answer, stop: async () => await worker.terminate() }
}

function damaged (name: string, quick: string): SnapshotIntegrityError {
  return new SnapshotIntegrityError(`segment ${name} holds a damaged database (quick_check: ${quick})`)
}

function refuse (name: string, problems: readonly string[]): void {
  if (problems.length > 0) throw new SnapshotIntegrityError(`segment ${name} does not hold what it says: ${problems.join(', ')}`)
}

/** Opens the segment read-only for `use`; a file SQLite cannot read is named as such. */
function reading<T> (path: string, name: string, use: (db: Db) => T): T {
  let db: Db | undefined
  try {
    // Read calls, not a map of the file: a map saves a little CPU, but each thread's map of a large
    // base counts whole in the process's resident memory, twice the file at once. A small cache:
    // the walk reads each page once, and several bases are checked at once.
    db = openDatabase(path, { readonly: true, check: false, cacheKiB: LEAN_CACHE_KIB })
    return use(db)
  } catch (err) {
    if (err instanceof SnapshotIntegrityError || err instanceof SnapshotFormatError) throw err
    const schema = /newer/.test((err as Error).message) ? ` (it needs schema ${SCHEMA_VERSION}+: upgrade cidsync)` : ''
    // Opening names a damaged file as the local index: a segment comes from the service, and only SQLite's words fit.
    const why = err instanceof IndexDamagedError ? err.problem : (err as Error).message
    throw new SnapshotIntegrityError(`segment ${name} cannot be read as a database${schema}: ${why}`, { cause: err })
  } finally {
    db?.close()
  }
}

interface Walked { rows: number, foreign_rows: number | null, low: number | null, high: number | null, live: number, unsafe: number }

/**
 * The walk of a segment whose schema is the index's: `entries` keyed by (device, folder, path).
 * So another device's rows and this device's folders are found by seeks down the key. Only what
 * needs every row (count, sequences, live rows, paths) is asked of every row.
 */
function keyedWalk (db: Db, deviceId: string): Walked {
  const found = db.prepare(`SELECT COUNT(*) AS rows, MIN(seq) AS low, MAX(seq) AS high, COALESCE(SUM(deleted = 0), 0) AS live,
    COALESCE(MAX(${UNSAFE_PATH}), 0) AS unsafe FROM entries`).get() as Omit<Walked, 'foreign_rows'>
  const foreign = db.prepare('SELECT EXISTS (SELECT 1 FROM entries WHERE device_id < @device) OR EXISTS (SELECT 1 FROM entries WHERE device_id > @device)').pluck().get({ device: deviceId }) === 1
    ? db.prepare('SELECT COUNT(*) FROM entries WHERE device_id != ?').pluck().get(deviceId) as number
    : 0
  // Another device's folders are not asked: its rows refuse the segment anyway.
  const folder = db.prepare(UNSAFE_FOLDERS).pluck().get({ device: deviceId }) as number
  return { ...found, foreign_rows: foreign, unsafe: Math.max(found.unsafe, folder) }
}

/** The walk of a segment declared otherwise (refused for that already): every check a row at a time. */
function plainWalk (db: Db, deviceId: string): Walked {
  return db.prepare(`SELECT COUNT(*) AS rows, SUM(device_id != ?) AS foreign_rows, MIN(seq) AS low, MAX(seq) AS high, COALESCE(SUM(deleted = 0), 0) AS live,
    COALESCE(MAX(${UNSAFE_ROW}), 0) AS unsafe FROM entries`).get(deviceId) as Walked
}

/** Every check but the quick one: schema, then one walk of the rows: device, sequences, live count, count, paths. */
function rowProblems (db: Db, range: Range): string[] {
  const problems: string[] = segmentSchemaProblems(db, range.deviceId, range.to)
  const found = problems.length === 0 ? keyedWalk(db, range.deviceId) : plainWalk(db, range.deviceId)
  // A segment of schema 5+ carries its live count (a base becomes a restored index as it is).
  if (hasLiveCounts(db)) {
    const carried = db.prepare('SELECT COALESCE(SUM(live), 0) FROM live_counts').pluck().get() as number
    if (carried !== found.live) problems.push(`a live count of ${carried} where it holds ${found.live} live rows`)
  }
  if (found.rows !== range.entries) problems.push(`${found.rows} rows where ${range.entries} were announced`)
  if ((found.foreign_rows ?? 0) > 0) problems.push(`${found.foreign_rows ?? 0} rows of another device`)
  if (found.low !== null && found.low <= (range.kind === 'base' ? -1 : range.from)) problems.push(`a row at sequence ${found.low}, not after ${range.from}`)
  if (found.high !== null && found.high > range.to) problems.push(`a row at sequence ${found.high}, past ${range.to}`)
  if (db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'content'").pluck().get() === 1) {
    const content = db.prepare('SELECT SUM(device_id != ?) AS foreign_rows, MIN(seq) AS low, MAX(seq) AS high FROM content').get(range.deviceId) as { foreign_rows: number | null, low: number | null, high: number | null }
    if ((content.foreign_rows ?? 0) > 0) problems.push(`${content.foreign_rows ?? 0} content records of another device`)
    if (content.low !== null && content.low <= (range.kind === 'base' ? -1 : range.from)) problems.push(`a content record at sequence ${content.low}, not after ${range.from}`)
    if (content.high !== null && content.high > range.to) problems.push(`a content record at sequence ${content.high}, past ${range.to}`)
  }
  // A row's folder/path becomes a path on disk (restore --files, storing after a restore): none may climb out.
  if (found.unsafe !== 0) {
    const unsafe = db.prepare(UNSAFE_PATHS).pluck().get() as string | undefined
    problems.push(`a row whose path is not inside its folder (${JSON.stringify((unsafe ?? '').slice(0, 200))})`)
  }
  return problems
}
