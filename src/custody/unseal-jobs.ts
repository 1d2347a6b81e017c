// What a sealing thread (seal-worker.ts) does for a restore: hash an object a gateway sent, and
// open a file's blob into its temp file, hashing the plaintext as it is written. The restoring
// thread then only fetches, checks and renames; the CPU work (SHA-256 twice, AES-GCM) and the
// file's writes run here, beside it. A verified file is held open, not fsynced at once: its
// restore fsyncs a batch of them together (`syncHeld`) and renames them only after. Files are
// written through the page cache, as restic writes them: a direct write holds a libuv thread
// until the disk answers, and on a VM's disk that wait can run to tens of milliseconds a write
// (docs/benchmarks.md, "Large files through the page cache"). The temp file
// is this thread's to open and close, so no write of a given-up job can land in a descriptor its
// caller reused. It is also this thread's to remove when the job fails or is given up, since a
// removal by the caller could come before the thread created it.
import { closeSync, fchmodSync, fchownSync, ftruncateSync, fstatSync, fsync, futimesSync, openSync, rmSync, writeSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import { fdPath, openedIn } from '../util/fd-path.js'
import { CidBuilder, cidProfile, ObjectBlocksRecorder, type ObjectBlocks } from '../content/index.js'
import { ContentIntegrityError, TargetPathError } from '../errors.js'
import { ChunkOpener } from './seal-stream.js'
import { utimesTime } from './mtime.js'
import type { HashJob, UnsealJob } from './seal-messages.js'

/** Objects are stored under the snapshots' profile (docs/content-format.md, "Objects"). */
const OBJECT_PROFILE = cidProfile('kubo-cidv1')

interface Unsealing {
  /** Null for a check: the plaintext is hashed, never written (`fd` is then -1). */
  readonly path: string | null
  readonly fd: number
  readonly inode: number
  readonly opener: ChunkOpener
  readonly builder: CidBuilder
  readonly size: number
  readonly cid: string
  readonly mtimeMs: number
  readonly mode: number
  readonly uid?: number
  readonly gid?: number
  written: number
}


const unsealing = new Map<number, Unsealing>()
/** Verified files, open until a sync names them (or their job is dropped). */
const held = new Map<number, { readonly fd: number, readonly path: string }>()

function writeAll (fd: number, bytes: Uint8Array): void {
  let done = 0
  while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done)
}

interface Hashing { readonly builder: CidBuilder, readonly recorder?: ObjectBlocksRecorder }

/** Open hash jobs, whose pieces come one message each. */
const hashing = new Map<number, Hashing>()

/** The object's CID under the snapshots' profile, and its blocks where the job asks; undefined for an open job, answered at its end. */
export function hashObject (job: HashJob): { readonly cid: string, readonly blocks?: ObjectBlocks } | undefined {
  const recorder = job.blocks === true ? new ObjectBlocksRecorder() : undefined
  const state: Hashing = { builder: new CidBuilder(OBJECT_PROFILE, recorder === undefined ? {} : { onBlock: recorder.onBlock }), recorder }
  for (const slab of job.slabs) state.builder.update(slab)
  if (job.open !== true) return hashed(state)
  hashing.set(job.id, state)
  return undefined
}

/** The next bytes of open hash job `id`. */
export function feedHash (id: number, bytes: Uint8Array): void {
  hashing.get(id)?.builder.update(bytes)
}

/** Open hash job `id`'s answer, once its bytes are all in; undefined for a job not open (dropped). */
export function endHash (id: number): { readonly cid: string, readonly blocks?: ObjectBlocks } | undefined {
  const state = hashing.get(id)
  hashing.delete(id)
  return state === undefined ? undefined : hashed(state)
}

/** Forgets open hash job `id` (cancelled). */
export function dropHash (id: number): void {
  hashing.delete(id)
}

function hashed ({ builder, recorder }: Hashing): { readonly cid: string, readonly blocks?: ObjectBlocks } {
  const cid = builder.finish().toString()
  return recorder === undefined ? { cid } : { cid, blocks: recorder.take() }
}

/**
 * Creates the job's temp file (never an existing one: `wx`, private until it is verified); a
 * check (no path) makes none.
 */
export function startUnseal (job: UnsealJob): void {
  const builder = new CidBuilder(cidProfile(job.profile))
  if (job.path === null) { track(job, builder, -1, 0); return }
  let fd: number
  try {
    fd = openSync(job.path, 'wx', 0o600)
  } catch (err) {
    throw notWritable(err, job.path)
  }
  let inode: number
  try {
    inode = fstatSync(fd).ino
    // Made where it was meant to be, or nothing is written: a directory swapped for a symlink
    // before the open sent the temp elsewhere, and its name now leads to another file.
    if (job.dir !== undefined && !openedIn(fd, job.path, job.dir, inode)) {
      throw new TargetPathError(`${dirname(job.path)} changed while a file was written into it: a symlink put in its way? Nothing was written through it`)
    }
  } catch (err) {
    // Emptied through its descriptor first: its name may lead elsewhere now, and nothing of it stays.
    try { ftruncateSync(fd, 0) } catch {}
    // Removed where it was made: through a swapped directory, its name may lead back by now.
    const made = fdPath(fd)
    closeSync(fd)
    rmSync(made !== undefined && basename(made) === basename(job.path) ? made : job.path, { force: true })
    throw err
  }
  track(job, builder, fd, inode)
}

/** The job's state from its first slice to its end: each slice opened, hashed and written (if it has a file). */
function track (job: UnsealJob, builder: CidBuilder, fd: number, inode: number): void {
  const state: Unsealing = {
    path: job.path,
    fd,
    inode,
    builder,
    size: job.size,
    cid: job.cid,
    mtimeMs: job.mtimeMs,
    mode: job.mode,
    uid: job.uid,
    gid: job.gid,
    written: 0,
    opener: new ChunkOpener({ key: job.key, cid: { bytes: job.cidBytes, toString: () => job.cid }, size: job.size }, (plain) => {
      state.written += plain.byteLength
      if (state.written > state.size) throw new ContentIntegrityError(`the stored content of ${state.cid} is longer than its ${state.size} bytes`)
      builder.update(plain)
      if (state.fd >= 0) writeAll(state.fd, plain)
    })
  }
  unsealing.set(job.id, state)
}

/** A temp this user may not make (a read-only directory, as a user): said with what to do, its code kept. */
function notWritable (err: unknown, path: string): unknown {
  const code = (err as NodeJS.ErrnoException).code
  if (code !== 'EACCES' && code !== 'EPERM') return err
  return Object.assign(new Error(`${dirname(path)} does not let this user write into it (${code}): make it writable (chmod u+w), or restore as its owner or as root`, { cause: err }), { code })
}

/**
 * Opens and writes the next slice of job `id`'s blob; answers the plaintext bytes written. Its
 * caller feeds a job's slices one after another, never two at once.
 */
export function feedUnseal (id: number, bytes: Uint8Array): number {
  const state = unsealing.get(id)
  if (state === undefined) return 0
  const before = state.written
  state.opener.feed(bytes)
  return state.written - before
}

/**
 * Checks the blob was whole, sets the file's mtime, and tells `done` the CID its plaintext hashes
 * to and its inode. A file that hashes to its row's CID is given its mode and held open for
 * {@link syncHeld}; one that does not is closed and removed here (its caller refuses it).
 */
export function endUnseal (id: number): { cid: string, inode: number } {
  const state = unsealing.get(id)
  if (state === undefined) throw new ContentIntegrityError(`restore job ${id} is unknown to its thread`)
  unsealing.delete(id)
  let cid: string
  try {
    state.opener.end()
    cid = state.builder.finish().toString()
    if (cid !== state.cid || state.path === null) {
      discard(state)
      return { cid, inode: state.inode }
    }
    // Here, on the open descriptor, so the restoring thread makes no call for it. Seconds as a
    // number keep the sub-millisecond part a Date would drop.
    futimesSync(state.fd, Date.now() / 1000, utimesTime(state.mtimeMs))
    // On the descriptor: a chown clears setuid bits, so the owner comes first, then the mode.
    if (state.uid !== undefined || state.gid !== undefined) fchownSync(state.fd, state.uid ?? -1, state.gid ?? -1)
    fchmodSync(state.fd, state.mode & 0o7777)
  } catch (err) {
    discard(state)
    throw err
  }
  held.set(id, { fd: state.fd, path: state.path })
  return { cid, inode: state.inode }
}

/**
 * fsyncs the held files of `ids` all at once on libuv's threads (concurrent fsyncs share the
 * filesystem's journal commits), closes them, and tells `done` which failed (each removed).
 */
export function syncHeld (ids: readonly number[], done: (failed: Array<{ job: number, code: string | undefined, message: string }>) => void): void {
  const failed: Array<{ job: number, code: string | undefined, message: string }> = []
  let left = ids.length + 1
  const settle = (): void => { if (--left === 0) done(failed) }
  for (const job of ids) {
    const file = held.get(job)
    held.delete(job)
    if (file === undefined) { failed.push({ job, code: undefined, message: `restore job ${job} holds no file in its thread` }); settle(); continue }
    fsync(file.fd, (err) => {
      try {
        closeSync(file.fd)
      } catch (closeErr) {
        err ??= closeErr as NodeJS.ErrnoException
      }
      if (err !== null) {
        rmSync(file.path, { force: true })
        failed.push({ job, code: err.code, message: err.message })
      }
      settle()
    })
  }
  settle()
}

function discard (state: { readonly fd: number, readonly path: string | null }): void {
  if (state.path === null) return
  try {
    closeSync(state.fd)
  } finally {
    rmSync(state.path, { force: true })
  }
}

/** Forgets job `id` (failed or given up): its file is closed and removed, written or held. */
export function dropUnseal (id: number): void {
  const file = held.get(id)
  if (file !== undefined) {
    held.delete(id)
    discard(file)
  }
  const state = unsealing.get(id)
  if (state === undefined) return
  unsealing.delete(id)
  discard(state)
}
