import { allocateHashBuffers, cidProfile, fileCidSync, segmentDigestsSync, smallFileCidSync, type CidProfileName, type HashBuffers } from '../content/index.js'
import type { HashJob, HashOutcome } from './hash-messages.js'

/**
 * Hashes jobs with blocking reads, one set of buffers per profile reused for every file: on a
 * hashing thread (hash-worker.ts), and a command's small files on its main thread (hash-pool.ts).
 * A failure is an outcome with its errno-style code, as the pool reports it.
 */
export class JobHasher {
  private readonly buffers = new Map<CidProfileName, HashBuffers>()

  /** `maxBytes`: a whole file larger than this as it is opened is not read ('too-large'). */
  hash (job: HashJob, onRead?: (bytes: number) => void, maxBytes?: number): HashOutcome | 'too-large' {
    const profile = cidProfile(job.profile)
    let reused = this.buffers.get(job.profile)
    if (reused === undefined) {
      reused = allocateHashBuffers(profile)
      this.buffers.set(job.profile, reused)
    }
    try {
      if (job.segment !== undefined) {
        const { digests, mtimeMs, stat } = segmentDigestsSync(job.path, profile, job.segment, job.segment.size, reused, onRead)
        return { id: job.id, ok: true, digests, mtimeMs, stat }
      }
      const hashed = maxBytes === undefined ? fileCidSync(job.path, profile, reused, onRead) : smallFileCidSync(job.path, profile, reused, maxBytes)
      if (hashed === 'too-large') return hashed
      return { id: job.id, ok: true, cid: hashed.cid.toString(), size: hashed.size, mtimeMs: hashed.mtimeMs, stat: hashed.stat }
    } catch (err) {
      const e = err as NodeJS.ErrnoException
      return { id: job.id, ok: false, code: e.code ?? 'ERR_HASH', message: e.message }
    }
  }
}
