import { createHash } from 'node:crypto'
import { parentPort } from 'node:worker_threads'
import type { HashAnswer, HashJob } from './block-hash-messages.js'

// The blocks' memory comes and goes back transferred, never copied: only their digests are new.
parentPort?.on('message', (job: HashJob) => {
  const digests = new Uint8Array(32 * (job.ranges.length / 2))
  for (let i = 0; i < job.ranges.length; i += 2) {
    digests.set(createHash('sha256').update(new Uint8Array(job.buffer, job.ranges[i], job.ranges[i + 1])).digest(), 16 * i)
  }
  const answer: HashAnswer = { id: job.id, buffer: job.buffer, digests: digests.buffer }
  parentPort?.postMessage(answer, [job.buffer, digests.buffer])
})
