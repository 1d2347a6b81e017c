// A sealing thread (seal-pool.ts): reads a file once, hashes the very bytes it reads to the row's
// CID, seals them chunk by chunk, and hands back a blob (small files) or part files (large ones),
// each with the CID of the object it makes. Reading, hashing and sealing run here, beside the
// thread that sends, instead of between its sends.
import { closeSync, constants, fstatSync, openSync, readSync, rmSync, writeSync, writevSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { parentPort } from 'node:worker_threads'
import { CID } from 'multiformats/cid'
import { CidBuilder, FileChangedWhileHashingError, ObjectBlocksRecorder, cidProfile } from '../content/index.js'
import { CHUNK_BYTES, chunkCount, plainChunkLength, sealChunkParts, sealedSize } from './chunks.js'
import type { FromSealer, LargeJob, SmallJob, ToSealer, UnsealJob } from './seal-messages.js'
import { dropHash, dropUnseal, endHash, endUnseal, feedHash, feedUnseal, hashObject, startUnseal, syncHeld } from './unseal-jobs.js'
import { InternalError } from '../errors.js'

const port = parentPort
if (port === null) throw new InternalError('seal-worker runs only as a worker thread')
const post = (message: FromSealer, transfer: ArrayBuffer[] = []): void => { port.postMessage(message, transfer) }

/** Objects are stored under the snapshots' profile (docs/content-format.md, "Objects"). */
const OBJECT_PROFILE = cidProfile('kubo-cidv1')
/** Parts sealed ahead of the one being sent: bounds the spool to two parts a file. */
const AHEAD = 1

// One buffer for every chunk this thread reads: nothing allocated per read.
const plain = Buffer.allocUnsafeSlow(CHUNK_BYTES)
const probe = Buffer.allocUnsafeSlow(1)
/** Large jobs running here: parts the pool said it sent, and who waits for the next. */
const running = new Map<number, { acked: number, cancelled: boolean, wake?: () => void }>()

function writeAll (fd: number, bytes: Uint8Array): void {
  let done = 0
  while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done)
}

/** `pieces` one after another, in one call; what a short write left, piece by piece. */
function writeAllPieces (fd: number, pieces: readonly Uint8Array[]): void {
  let done = writevSync(fd, pieces as Uint8Array[])
  for (const piece of pieces) {
    if (done >= piece.byteLength) { done -= piece.byteLength; continue }
    writeAll(fd, piece.subarray(done))
    done = 0
  }
}

/** Reads chunk `index` of the job's file into `plain`; a file shorter or longer than its row is a changed file. */
function readChunk (fd: number, job: SmallJob | LargeJob, index: number, count: number): Buffer {
  const want = plainChunkLength(job.size, index)
  let got = 0
  while (got < want) {
    const n = readSync(fd, plain, got, want - got, null)
    if (n === 0) throw new FileChangedWhileHashingError(`the file has ${index * CHUNK_BYTES + got} bytes, not its indexed ${job.size}, as it was read`)
    got += n
  }
  if (index === count - 1 && readSync(fd, probe, 0, 1, null) > 0) throw new FileChangedWhileHashingError(`the file grew past its indexed ${job.size} bytes while it was read`)
  return plain.subarray(0, want)
}

/**
 * The indexed file, opened to read: never blocking in open() on a FIFO swapped in since it was
 * indexed, and only while it is still a regular file (else a changed file, tried again later).
 */
function openIndexed (path: string): number {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    if (!fstatSync(fd).isFile()) throw new FileChangedWhileHashingError(`${path} is no longer a regular file: it changed since it was indexed`)
  } catch (err) {
    closeSync(fd)
    throw err
  }
  return fd
}

function checkSame (job: SmallJob | LargeJob, builder: CidBuilder): void {
  const read = builder.finish().toString()
  if (read !== job.cid) throw new FileChangedWhileHashingError(`${job.path} holds ${read} now, not its indexed ${job.cid}: it changed since it was indexed`)
}

function sealSmall (job: SmallJob): void {
  const cid = CID.parse(job.cid)
  const builder = new CidBuilder(cidProfile(job.profile))
  const count = chunkCount(job.size)
  // Its own buffer, handed over whole (transferred, not copied).
  const blob = new Uint8Array(sealedSize(job.size))
  const fd = openIndexed(job.path)
  try {
    let at = 0
    for (let i = 0; i < count; i++) {
      const bytes = readChunk(fd, job, i, count)
      builder.update(bytes)
      for (const piece of sealChunkParts(job.key, cid, i, i === count - 1, bytes)) { blob.set(piece, at); at += piece.byteLength }
    }
  } finally {
    closeSync(fd)
  }
  checkSame(job, builder)
  post({ type: 'blob', id: job.id, blob: blob.buffer }, [blob.buffer])
}

async function sealLarge (job: LargeJob): Promise<void> {
  const cid = CID.parse(job.cid)
  const builder = new CidBuilder(cidProfile(job.profile))
  const stored = new Map(job.storedParts)
  const count = chunkCount(job.size)
  const state = { acked: 0, cancelled: false } as { acked: number, cancelled: boolean, wake?: () => void }
  running.set(job.id, state)
  let sent = 0
  let spool: { fd: number, path: string } | undefined
  let part: CidBuilder | undefined
  // The part's blocks named as they are hashed: a service in this process stores them unhashed.
  const blocks = new ObjectBlocksRecorder()
  let bytes = 0
  const fd = openIndexed(job.path)
  try {
    for (let i = 0; i < count; i++) {
      const last = i === count - 1
      const chunk = readChunk(fd, job, i, count)
      builder.update(chunk)
      if (spool === undefined) {
        const path = join(job.spoolDir, `part-${randomBytes(8).toString('hex')}.tmp`)
        spool = { fd: openSync(path, 'wx', 0o600), path }
        part = new CidBuilder(OBJECT_PROFILE, { onBlock: blocks.onBlock })
        bytes = 0
      }
      const pieces = sealChunkParts(job.key, cid, i, last, chunk)
      for (const piece of pieces) {
        part?.update(piece)
        bytes += piece.byteLength
      }
      writeAllPieces(spool.fd, pieces)
      if ((i + 1) % job.partChunks !== 0 && !last) continue
      const index = Math.floor(i / job.partChunks)
      const object = (part as CidBuilder).finish().toString()
      closeSync(spool.fd)
      // A part an earlier run stored is kept only if these bytes make that very object.
      const same = stored.get(index) === object
      if (same) rmSync(spool.path, { force: true })
      post({ type: 'part', id: job.id, index, path: same ? null : spool.path, object, bytes, blocks: blocks.take() })
      spool = undefined
      if (!same) sent++
      // The whole file is checked at the end; a changed file's parts stay unreferenced.
      while (sent - state.acked > AHEAD && !state.cancelled) await new Promise<void>(resolve => { state.wake = resolve })
      if (state.cancelled) return
    }
  } finally {
    running.delete(job.id)
    closeSync(fd)
    if (spool !== undefined) {
      closeSync(spool.fd)
      rmSync(spool.path, { force: true })
    }
  }
  checkSame(job, builder)
  post({ type: 'done', id: job.id })
}

async function run (job: SmallJob | LargeJob): Promise<void> {
  try {
    if (job.type === 'small') sealSmall(job)
    else await sealLarge(job)
  } catch (err) {
    failed(job.id, err)
  }
}

function failed (id: number, err: unknown): void {
  post(failedAnswer(id, err))
}

function failedAnswer (id: number, err: unknown): Extract<FromSealer, { type: 'failed' }> {
  const e = err as NodeJS.ErrnoException
  return { type: 'failed', id, changed: err instanceof FileChangedWhileHashingError, code: typeof e.code === 'string' ? e.code : undefined, message: e.message }
}

/**
 * Each unseal job's messages, run one after another: a slice may wait for its file's earlier
 * writes, and the next must not be opened before it. Jobs run beside each other.
 */
const turns = new Map<number, Promise<void>>()

function inTurn (id: number, work: () => Promise<void>): void {
  const turn = (turns.get(id) ?? Promise.resolve()).then(work)
  turns.set(id, turn)
  // `work` answers its own failures (below): this only forgets a job whose messages are all done.
  void turn.then(() => { if (turns.get(id) === turn) turns.delete(id) })
}

/** Drops a failed job's file; the job's own failure is what its caller is told. */
function dropQuietly (id: number): void {
  try { dropUnseal(id) } catch {}
}

/** A restore's jobs (unseal-jobs.ts): each answered in order, a failure ending its job. */
function restoreJob (message: Extract<ToSealer, { type: 'hash' | 'unseal' | 'piece' | 'end' | 'sync' }>): void {
  const { id } = message
  if (message.type === 'hash' || message.type === 'sync') {
    try {
      if (message.type === 'hash') {
        const answer = hashObject(message)
        if (answer !== undefined) post({ type: 'hashed', id, ...answer })
      }
      else syncHeld(message.jobs, (failures) => { post({ type: 'synced', id, failed: failures }) })
    } catch (err) {
      failed(id, err)
    }
    return
  }
  inTurn(id, async () => {
    try {
      if (message.type === 'unseal') {
        startUnseal(message)
        if (message.whole !== undefined) {
          let plainBytes = 0
          for (const bytes of message.whole) plainBytes += feedUnseal(id, bytes)
          post({ type: 'unsealed', id, ...endUnseal(id), plainBytes })
        }
      } else if (message.type === 'piece') post({ type: 'opened', id, plainBytes: feedUnseal(id, message.bytes) })
      else post({ type: 'unsealed', id, ...endUnseal(id) })
    } catch (err) {
      dropQuietly(id)
      failed(id, err)
    }
  })
}

/**
 * The files of one pack, opened one after another, each in its own job's turn (a cancel of one
 * runs after it); answered in one message once all are done.
 */
function restoreMany (jobs: readonly UnsealJob[]): void {
  const answers: Array<Extract<FromSealer, { type: 'unsealed' | 'failed' }>> = []
  let previous = Promise.resolve()
  for (const job of jobs) {
    const before = previous
    const mine = new Promise<void>((resolve) => {
      inTurn(job.id, async () => {
        await before
        try {
          startUnseal(job)
          let plainBytes = 0
          for (const bytes of job.whole ?? []) plainBytes += feedUnseal(job.id, bytes)
          answers.push({ type: 'unsealed', id: job.id, ...endUnseal(job.id), plainBytes })
        } catch (err) {
          dropQuietly(job.id)
          answers.push(failedAnswer(job.id, err))
        } finally {
          resolve()
        }
      })
    })
    previous = mine
  }
  void previous.then(() => { post({ type: 'many', answers }) })
}

/** An open hash job's pieces and end: hashed at once, in the order sent. */
function hashPiece (message: Extract<ToSealer, { type: 'hash-piece' | 'hash-end' }>): void {
  try {
    if (message.type === 'hash-piece') { feedHash(message.id, message.bytes); return }
    const answer = endHash(message.id)
    if (answer !== undefined) post({ type: 'hashed', id: message.id, ...answer })
  } catch (err) {
    dropHash(message.id)
    failed(message.id, err)
  }
}

port.on('message', (message: ToSealer) => {
  if (message.type === 'unseal-many') { restoreMany(message.jobs); return }
  if (message.type === 'hash-piece' || message.type === 'hash-end') { hashPiece(message); return }
  if (message.type === 'hash' || message.type === 'unseal' || message.type === 'piece' || message.type === 'end' || message.type === 'sync') { restoreJob(message); return }
  if (message.type === 'cancel') {
    const { id } = message
    dropHash(id)
    // After the job's slices already sent: its file is closed only once none is being opened or written.
    inTurn(id, async () => {
      try {
        dropUnseal(id)
      } catch (err) {
        failed(id, err)
      } finally {
        post({ type: 'dropped', id })
      }
    })
  }
  if (message.type === 'ack' || message.type === 'cancel') {
    const state = running.get(message.id)
    if (state === undefined) return
    if (message.type === 'ack') state.acked++
    else state.cancelled = true
    state.wake?.()
    return
  }
  void run(message)
})
