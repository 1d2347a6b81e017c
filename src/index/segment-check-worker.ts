import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'

/** What the thread is asked: one read-only statement over one database file (segment-check.ts's own SQL, never outside input). */
export interface CheckJob { readonly path: string, readonly sql: string, readonly cacheKiB: number }
/** Its answer: the statement's first value (as text), or why the file could not be read. */
export type CheckAnswer = { readonly ok: true, readonly result: string } | { readonly ok: false, readonly message: string }

// A large segment's quick check on a thread of its own while the main thread walks its rows
// (segment-check.ts): the two read the same file at once.
const job = workerData as CheckJob
let answer: CheckAnswer
try {
  const db = new Database(job.path, { readonly: true, fileMustExist: true })
  try {
    db.pragma(`cache_size = -${Math.max(1, Math.floor(job.cacheKiB))}`)
    answer = { ok: true, result: String(db.prepare(job.sql).pluck().get()) }
  } finally {
    db.close()
  }
} catch (err) {
  answer = { ok: false, message: (err as Error).message }
}
parentPort?.postMessage(answer)
