import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { tryExclusiveLock } from '../util/exclusive-lock.js'
import { ServiceReclaimBusyError } from '../errors.js'
import { failpoint } from '../util/failpoint.js'
import type { BlockStore } from './blocks.js'
import { LiveMarks } from './reclaim-mark.js'
import { PackRewriter } from './reclaim-packs.js'
import { condemn, forgetDeleted, sweep } from './reclaim-sweep.js'
import { readEpoch, writeEpoch, type UploadGate } from './upload-gate.js'

/** The lock one reclaim of a data dir holds, whichever process runs it. */
export const RECLAIM_LOCK = 'reclaim.lock'

/** A setting present from a reclaim's start to its end: one killed midway left it. */
const UNFINISHED = 'reclaim_unfinished'

/**
 * Whether a reclaim is due: an upload was deleted since the last one, or the last one was cut
 * short (a kill, a stop) and left its work to the next.
 */
export function reclaimDue (db: Database.Database): boolean {
  return db.prepare('SELECT 1 FROM files WHERE deleted_at IS NOT NULL LIMIT 1').get() !== undefined ||
    db.prepare('SELECT 1 FROM settings WHERE key = ?').get(UNFINISHED) !== undefined
}

/** Where a reclaim is, as it goes. */
export type ReclaimProgress =
  /** Waiting for uploads that began before it to end. */
  | { readonly phase: 'waiting' }
  /** Blocks marked as held so far. */
  | { readonly phase: 'marking', readonly blocks: number }
  /** The blocks no root held at the walk, condemned. */
  | { readonly phase: 'condemned', readonly blocks: number }
  /** Dead blocks dropped so far, and their bytes. */
  | { readonly phase: 'sweeping', readonly blocks: number, readonly bytes: number }
  /** Packs looked at so far, of those a rewrite may take. */
  | { readonly phase: 'packing', readonly done: number, readonly of: number }

export interface ReclaimOptions {
  readonly signal?: AbortSignal
  readonly onProgress?: (progress: ReclaimProgress) => void
}

/** What a reclaim gave back. */
export interface ReclaimResult {
  /** Blocks no root held, dropped from the index, and their bytes. */
  readonly blocksFreed: number
  readonly bytesFreed: number
  /** Deleted uploads whose bytes no longer count against their account's quota. */
  readonly uploadsForgotten: number
  /** Packs rewritten into new ones, and pack files removed (rewritten, wholly dead, or left by a killed reclaim). */
  readonly packsRewritten: number
  readonly packsRemoved: number
  /** Bytes the pack files gave back to the disk. */
  readonly diskBytesFreed: number
  /** Dead bytes left in packs whose dead share is under the threshold. */
  readonly deadBytesLeft: number
  /** Blocks held whose links could not be read: each held itself alone. */
  readonly opaqueBlocks: number
  readonly elapsedMs: number
}

/** What a reclaim works on: one service's data dir, as its block store opened it. */
export interface ReclaimTarget {
  readonly dir: string
  readonly db: Database.Database
  readonly blocks: BlockStore
  readonly gate: UploadGate
}

/** Takes the data dir's reclaim lock (an fcntl lock under SQLite, dropped by the kernel when its holder dies). */
function takeLock (dir: string): () => void {
  const lock = tryExclusiveLock(join(dir, RECLAIM_LOCK))
  if (lock === undefined) throw new ServiceReclaimBusyError(`another process is reclaiming the space of the local service in ${dir}: it gives the space back; run this again once it is done`)
  return lock.release
}

/**
 * Gives back the space of blocks no upload, pointer or IPNS name holds (a garbage collection).
 *
 * Crash and concurrency rules (what a kill -9 at any moment, or another process, meets):
 * 1. One reclaim at a time per data dir, in any process: it holds `reclaim.lock` exclusively,
 *    and the kernel drops that lock when its holder dies.
 * 2. A block is dropped only once condemned, and still dead after every root held then was
 *    walked: every live upload's root, every pointer's snapshot and every IPNS name's CID.
 *    When unsure it keeps: a block it cannot read the links of holds itself alone.
 * 3. No upload loses a block it relied on. An upload that began before the condemning may have
 *    found a block stored, then dead, and rely on it: the reclaim waits for every such upload, in
 *    every process, to end (upload-gate.ts), then walks the roots they listed. An upload begun
 *    after it never relies on a condemned block: it writes it again (blocks.ts, rule 6).
 * 4. Each transaction that drops blocks first checks that no root came since the last walk.
 * 5. Only packs of earlier epochs are rewritten: once the uploads of those epochs have ended,
 *    no process appends to them (blocks.ts, rule 6). A row moves only to bytes already fsynced,
 *    and a pack file goes only once marked removed with no row naming it (reclaim-packs.ts).
 * 6. A kill at any step leaves every live block readable where its row says; the next reclaim
 *    finishes the work: it removes what removed packs left, and rewrites what is still dead.
 * 7. Deleted uploads stop counting against the quota only once every block no root holds is
 *    dropped: their listing rows go last.
 */
export async function reclaimSpace (target: ReclaimTarget, options: ReclaimOptions = {}): Promise<ReclaimResult> {
  const started = Date.now()
  const { db, blocks, gate, dir } = target
  const { signal } = options
  const progress = options.onProgress ?? (() => {})
  const release = takeLock(dir)
  let marks: LiveMarks | undefined
  try {
    // Cleared only at the end: a reclaim killed after its sweep leaves no deleted upload to say one is due.
    db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(UNFINISHED, new Date(started).toISOString())
    const epoch = readEpoch(db)
    // Uploads of the epoch before this one use the parity the next epoch will: none may be left.
    await target.gate.drain(epoch + 1, signal, () => { progress({ phase: 'waiting' }) })
    marks = new LiveMarks(db, blocks)
    marks.takeRoots()
    const walked = marks
    await walked.walk(signal, count => { progress({ phase: 'marking', blocks: count }) })
    failpoint('service:reclaim-marked')
    const condemned = await condemn(db, epoch + 1, signal)
    writeEpoch(db, epoch + 1)
    blocks.notice(epoch + 1)
    progress({ phase: 'condemned', blocks: condemned })
    failpoint('service:reclaim-condemned')
    await gate.drain(epoch, signal, () => { progress({ phase: 'waiting' }) })
    const freed = await sweep(db, walked, signal, (count, bytes) => { progress({ phase: 'sweeping', blocks: count, bytes }) })
    const uploadsForgotten = await forgetDeleted(db, signal)
    const packs = await new PackRewriter(db, blocks, join(dir, 'packs'), epoch + 1, blocks.packLimit)
      .run(signal, (done, of) => { progress({ phase: 'packing', done, of }) })
    db.prepare('DELETE FROM settings WHERE key = ?').run(UNFINISHED)
    return {
      blocksFreed: freed.blocks,
      bytesFreed: freed.bytes,
      uploadsForgotten,
      packsRewritten: packs.rewritten,
      packsRemoved: packs.removed,
      diskBytesFreed: packs.diskBytesFreed,
      deadBytesLeft: packs.deadBytesLeft,
      opaqueBlocks: walked.opaque,
      elapsedMs: Date.now() - started
    }
  } finally {
    marks?.drop()
    release()
  }
}
