import { parentPort } from 'node:worker_threads'
import { allocateHashBuffers, cidProfile, fileCidSync, segmentDigestsSync, type CidProfileName, type HashBuffers } from '../content/index.js'
import type { HashJob, HashOutcome } from './hash-messages.js'

// One set of buffers per profile, reused for every file this thread hashes.
const buffers = new Map<CidProfileName, HashBuffers>()

function hashOne (job: HashJob): HashOutcome {
  const profile = cidProfile(job.profile)
  let reused = buffers.get(job.profile)
  if (reused === undefined) {
    reused = allocateHashBuffers(profile)
    buffers.set(job.profile, reused)
  }
  try {
    if (job.segment !== undefined) {
      const { digests, mtimeMs } = segmentDigestsSync(job.path, profile, job.segment, job.segment.size, reused)
      return { id: job.id, ok: true, digests, mtimeMs }
    }
    const { cid, size, mtimeMs } = fileCidSync(job.path, profile, reused)
    return { id: job.id, ok: true, cid: cid.toString(), size, mtimeMs }
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    return { id: job.id, ok: false, code: e.code ?? 'ERR_HASH', message: e.message }
  }
}

parentPort?.on('message', (jobs: HashJob[]) => {
  parentPort?.postMessage(jobs.map(hashOne))
})
