import { parentPort, workerData } from 'node:worker_threads'
import Database from 'better-sqlite3'

/** What the thread is asked: one database file, read only. */
export interface QuickCheckJob { readonly path: string, readonly mmapBytes: number }
/** Its answer: SQLite's first line of `quick_check`, or why the file could not be read. */
export type QuickCheckAnswer = { readonly ok: true, readonly result: string } | { readonly ok: false, readonly message: string }

// A segment's `PRAGMA quick_check` on a thread of its own, while the main thread walks its rows
// (segment-check.ts): the two read the same file at once.
const job = workerData as QuickCheckJob
let answer: QuickCheckAnswer
try {
  const db = new Database(job.path, { readonly: true, fileMustExist: true })
  try {
    db.pragma(`mmap_size = ${job.mmapBytes}`)
    answer = { ok: true, result: String(db.pragma('quick_check(1)', { simple: true })) }
  } finally {
    db.close()
  }
} catch (err) {
  answer = { ok: false, message: (err as Error).message }
}
parentPort?.postMessage(answer)
