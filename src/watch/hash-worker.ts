import { parentPort } from 'node:worker_threads'
import { cidProfile, fileCidSync, type CidProfileName } from '../content/index.js'
import type { HashJob, HashOutcome } from './hash-messages.js'

// One read buffer per profile, reused for every file this thread hashes.
const buffers = new Map<CidProfileName, Buffer>()

function hashOne (job: HashJob): HashOutcome {
  const profile = cidProfile(job.profile)
  let buffer = buffers.get(job.profile)
  if (buffer === undefined) {
    buffer = Buffer.allocUnsafe(profile.chunkSize)
    buffers.set(job.profile, buffer)
  }
  try {
    const { cid, size, mtimeMs } = fileCidSync(job.path, profile, buffer)
    return { id: job.id, ok: true, cid: cid.toString(), size, mtimeMs }
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    return { id: job.id, ok: false, code: e.code ?? 'ERR_HASH', message: e.message }
  }
}

parentPort?.on('message', (jobs: HashJob[]) => {
  parentPort?.postMessage(jobs.map(hashOne))
})
