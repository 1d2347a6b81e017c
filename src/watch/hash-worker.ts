import { parentPort } from 'node:worker_threads'
import { allocateHashBuffers, cidProfile, fileCidSync, segmentDigestsSync, type CidProfileName, type HashBuffers } from '../content/index.js'
import type { HashJob, HashOutcome } from './hash-messages.js'

// One set of buffers per profile, reused for every file this thread hashes.
const buffers = new Map<CidProfileName, HashBuffers>()

/** Bytes read of the batch in hand, shared with the main thread (status shows large files' progress). */
let progress: BigInt64Array | undefined
const onRead = (bytes: number): void => { if (progress !== undefined) Atomics.add(progress, 0, BigInt(bytes)) }

function hashOne (job: HashJob): HashOutcome {
  const profile = cidProfile(job.profile)
  let reused = buffers.get(job.profile)
  if (reused === undefined) {
    reused = allocateHashBuffers(profile)
    buffers.set(job.profile, reused)
  }
  try {
    if (job.segment !== undefined) {
      const { digests, mtimeMs, stat } = segmentDigestsSync(job.path, profile, job.segment, job.segment.size, reused, onRead)
      return { id: job.id, ok: true, digests, mtimeMs, stat }
    }
    const { cid, size, mtimeMs, stat } = fileCidSync(job.path, profile, reused, onRead)
    return { id: job.id, ok: true, cid: cid.toString(), size, mtimeMs, stat }
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    return { id: job.id, ok: false, code: e.code ?? 'ERR_HASH', message: e.message }
  }
}

parentPort?.on('message', (message: HashJob[] | { progress: SharedArrayBuffer }) => {
  if (!Array.isArray(message)) {
    progress = new BigInt64Array(message.progress)
    return
  }
  if (progress !== undefined) Atomics.store(progress, 0, 0n)
  parentPort?.postMessage(message.map(hashOne))
})
