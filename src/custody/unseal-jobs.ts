// What a sealing thread (seal-worker.ts) does for a restore: hash an object a gateway sent, and
// open a file's blob into its temp file, hashing the plaintext as it is written. The restoring
// thread then only fetches, checks and renames; the CPU work (SHA-256 twice, AES-GCM) and the
// file's writes run here, beside it. The temp file is this thread's to open and close, so no
// write of a given-up job can land in a descriptor its caller reused, and its to remove when the
// job fails or is given up: a removal by the caller could come before the thread created it.
import { closeSync, fstatSync, fsync, futimesSync, openSync, rmSync, writeSync } from 'node:fs'
import { CID } from 'multiformats/cid'
import { CidBuilder, cidProfile } from '../content/index.js'
import { ContentIntegrityError } from '../errors.js'
import { ChunkOpener } from './seal-stream.js'
import type { HashJob, UnsealJob } from './seal-messages.js'

/** Objects are stored under the snapshots' profile (docs/content-format.md, "Objects"). */
const OBJECT_PROFILE = cidProfile('kubo-cidv1')

interface Unsealing {
  readonly path: string
  readonly fd: number
  readonly inode: number
  readonly opener: ChunkOpener
  readonly builder: CidBuilder
  readonly size: number
  readonly cid: string
  readonly mtimeMs: number
  written: number
}

const unsealing = new Map<number, Unsealing>()

function writeAll (fd: number, bytes: Uint8Array): void {
  let done = 0
  while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done)
}

/** The object's CID under the snapshots' profile. */
export function hashObject (job: HashJob): string {
  const builder = new CidBuilder(OBJECT_PROFILE)
  for (const slab of job.slabs) builder.update(slab)
  return builder.finish().toString()
}

/** Creates the job's temp file (never an existing one: `wx`, private until it is verified). */
export function startUnseal (job: UnsealJob): void {
  const builder = new CidBuilder(cidProfile(job.profile))
  const fd = openSync(job.path, 'wx', 0o600)
  let inode: number
  try {
    inode = fstatSync(fd).ino
  } catch (err) {
    closeSync(fd)
    rmSync(job.path, { force: true })
    throw err
  }
  const state: Unsealing = {
    path: job.path,
    fd,
    inode,
    builder,
    size: job.size,
    cid: job.cid,
    mtimeMs: job.mtimeMs,
    written: 0,
    opener: new ChunkOpener({ key: job.key, cid: CID.parse(job.cid), size: job.size }, (plain) => {
      state.written += plain.byteLength
      if (state.written > state.size) throw new ContentIntegrityError(`the stored content of ${state.cid} is longer than its ${state.size} bytes`)
      builder.update(plain)
      writeAll(state.fd, plain)
    })
  }
  unsealing.set(job.id, state)
}

/** Opens and writes the next slice of job `id`'s blob; answers the plaintext bytes written. */
export function feedUnseal (id: number, bytes: Uint8Array): number {
  const state = unsealing.get(id)
  if (state === undefined) return 0
  const before = state.written
  state.opener.feed(bytes)
  return state.written - before
}

/**
 * Checks the blob was whole, sets the file's mtime, fsyncs and closes it (the fsync on libuv's threads: this thread
 * opens other files meanwhile), then tells `done` the CID its plaintext hashes to and its inode.
 */
export function endUnseal (id: number, done: (err: Error | null, answer?: { cid: string, inode: number }) => void): void {
  const state = unsealing.get(id)
  if (state === undefined) throw new ContentIntegrityError(`restore job ${id} is unknown to its thread`)
  unsealing.delete(id)
  let cid: string
  try {
    state.opener.end()
    cid = state.builder.finish().toString()
    // Here, on the open descriptor: one call less for the restoring thread. Seconds as a number
    // keep the sub-millisecond part a Date would drop.
    futimesSync(state.fd, Date.now() / 1000, state.mtimeMs / 1000)
  } catch (err) {
    discard(state)
    throw err
  }
  fsync(state.fd, (err) => {
    try {
      closeSync(state.fd)
    } catch (closeErr) {
      err ??= closeErr as NodeJS.ErrnoException
    }
    if (err !== null) rmSync(state.path, { force: true })
    done(err, { cid, inode: state.inode })
  })
}

function discard (state: Unsealing): void {
  try {
    closeSync(state.fd)
  } finally {
    rmSync(state.path, { force: true })
  }
}

/** Forgets job `id` (failed or given up): its file is closed and removed. */
export function dropUnseal (id: number): void {
  const state = unsealing.get(id)
  if (state === undefined) return
  unsealing.delete(id)
  discard(state)
}
