import { parentPort, workerData } from 'node:worker_threads'
import type { ScanMessage, ScanRequest } from './scan-messages.js'
import { scan } from './scan-walk.js'

// The startup scan's thread (watch/scan.ts): the walk of scan-walk.ts, its messages posted back.
const port = parentPort
if (port !== null) {
  try {
    scan(workerData as ScanRequest, message => port.postMessage(message))
  } catch (err) {
    port.postMessage({ type: 'failed', message: (err as Error).message } satisfies ScanMessage)
  }
}
