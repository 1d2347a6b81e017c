import { createHash } from 'node:crypto'
import { parentPort } from 'node:worker_threads'
import type { HashAnswer, HashJob } from './block-hash-messages.js'

// The block's memory comes and goes back transferred, never copied: only its 32-byte digest is new.
parentPort?.on('message', (job: HashJob) => {
  const digest = createHash('sha256').update(new Uint8Array(job.buffer, job.offset, job.length)).digest()
  const answer: HashAnswer = { id: job.id, buffer: job.buffer, digest: digest.buffer.slice(digest.byteOffset, digest.byteOffset + digest.byteLength) }
  parentPort?.postMessage(answer, [job.buffer])
})
