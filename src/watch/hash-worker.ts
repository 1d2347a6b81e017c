import { parentPort } from 'node:worker_threads'
import type { HashJob } from './hash-messages.js'
import { JobHasher } from './hash-job.js'

const hasher = new JobHasher()

/** Bytes read of the batch in hand, shared with the main thread (status shows large files' progress). */
let progress: BigInt64Array | undefined
const onRead = (bytes: number): void => { if (progress !== undefined) Atomics.add(progress, 0, BigInt(bytes)) }

parentPort?.on('message', (message: HashJob[] | { progress: SharedArrayBuffer }) => {
  if (!Array.isArray(message)) {
    progress = new BigInt64Array(message.progress)
    return
  }
  if (progress !== undefined) Atomics.store(progress, 0, 0n)
  // Never 'too-large': no bound is given here.
  parentPort?.postMessage(message.map(job => hasher.hash(job, onRead)))
})
