import type Database from 'better-sqlite3'
import { ServiceReclaimBusyError } from '../errors.js'
import { failpoint } from '../util/failpoint.js'
import type { LiveMarks } from './reclaim-mark.js'

/** Rows one transaction condemns, drops or forgets: the write lock is held for short turns. */
const CHUNK = 5_000
/** Sweep turns in a row that may find a root listed since the last walk before the reclaim gives up. */
const MAX_MISSES = 1_000

const turn = async (): Promise<void> => { await new Promise(resolve => setImmediate(resolve)) }

/**
 * Condemns every block not marked live (blocks.ts, rule 6), a range of the index at a time, and
 * clears the mark of live blocks an earlier, killed reclaim condemned. Answers how many it condemned.
 */
export async function condemn (db: Database.Database, epoch: number, signal?: AbortSignal): Promise<number> {
  const upper = db.prepare('SELECT cid FROM blocks WHERE cid > ? ORDER BY cid LIMIT 1 OFFSET ?').pluck()
  const dead = 'condemned IS NULL AND cid NOT IN (SELECT cid FROM temp.reclaim_live)'
  const range = db.prepare(`UPDATE blocks SET condemned = ? WHERE cid > ? AND cid <= ? AND ${dead}`)
  const tail = db.prepare(`UPDATE blocks SET condemned = ? WHERE cid > ? AND ${dead}`)
  // Each write takes the write lock before it reads (IMMEDIATE): a snapshot another process wrote
  // past meanwhile would fail the write instead (SQLITE_BUSY_SNAPSHOT).
  const chunk = db.transaction((after: Uint8Array) => {
    const end = upper.get(after, CHUNK - 1) as Uint8Array | undefined
    const changes = (end === undefined ? tail.run(epoch, after) : range.run(epoch, after, end)).changes
    return { end, changes }
  })
  let condemned = 0
  for (let after: Uint8Array = new Uint8Array(0); ;) {
    signal?.throwIfAborted()
    const { end, changes } = chunk.immediate(after)
    condemned += changes
    if (end === undefined) break
    after = end
    await turn()
  }
  unmarkLive(db)
  return condemned
}

/**
 * Live blocks lose a condemned mark (a killed reclaim's, or one marked live since): puts rely on
 * them again. Through the index of condemned blocks: they are the dead ones, fewer than the live.
 */
function unmarkLive (db: Database.Database): void {
  const unmark = db.prepare('UPDATE blocks INDEXED BY blocks_condemned SET condemned = NULL WHERE condemned IS NOT NULL AND cid IN (SELECT cid FROM temp.reclaim_live)')
  db.transaction(() => unmark.run()).immediate()
}

/**
 * Drops the condemned blocks no root holds, a chunk at a time. Before each, the roots held since
 * the last walk are walked; each chunk's transaction checks that none came meanwhile (an upload
 * listed, a pointer moved), so no block a root names is dropped. `onSwept` hears the totals.
 */
export async function sweep (db: Database.Database, marks: LiveMarks, signal: AbortSignal | undefined, onSwept: (blocks: number, bytes: number) => void): Promise<{ blocks: number, bytes: number }> {
  const dead = db.prepare('SELECT cid, length FROM blocks WHERE condemned IS NOT NULL AND cid NOT IN (SELECT cid FROM temp.reclaim_live) LIMIT ?')
  const drop = db.prepare('DELETE FROM blocks WHERE cid = ? AND condemned IS NOT NULL')
  const freed = { blocks: 0, bytes: 0 }
  for (let misses = 0; ;) {
    signal?.throwIfAborted()
    if (marks.takeNewRoots() > 0) {
      await marks.walk(signal)
      unmarkLive(db)
    }
    const swept = db.transaction(() => {
      if (marks.hasNewRoots()) return undefined
      const rows = dead.all(CHUNK) as Array<{ cid: Uint8Array, length: number }>
      for (const row of rows) drop.run(row.cid)
      return { blocks: rows.length, bytes: rows.reduce((sum, row) => sum + row.length, 0) }
    }).immediate()
    if (swept === undefined) {
      if (++misses > MAX_MISSES) throw new ServiceReclaimBusyError('uploads listed new roots faster than the reclaim could walk them: nothing it had not walked was dropped; run it again later')
      continue
    }
    misses = 0
    if (swept.blocks === 0) return freed
    freed.blocks += swept.blocks
    freed.bytes += swept.bytes
    onSwept(freed.blocks, freed.bytes)
    failpoint('service:reclaim-swept')
    await turn()
  }
}

/**
 * Drops the listing rows of the uploads deleted before the walk began: every block they held is
 * now dropped or held by a root, so their bytes no longer count against any quota. Answers how many.
 */
export async function forgetDeleted (db: Database.Database, signal?: AbortSignal): Promise<number> {
  const page = db.prepare('SELECT seq FROM temp.reclaim_deleted WHERE seq > ? ORDER BY seq LIMIT ?').pluck()
  const forget = db.prepare('DELETE FROM files WHERE seq = ? AND deleted_at IS NOT NULL')
  let forgotten = 0
  for (let after = -1; ;) {
    signal?.throwIfAborted()
    const seqs = page.all(after, CHUNK) as number[]
    if (seqs.length === 0) return forgotten
    forgotten += db.transaction(() => seqs.reduce((sum, seq) => sum + forget.run(seq).changes, 0)).immediate()
    after = seqs[seqs.length - 1] as number
    await turn()
  }
}
