// The local service running in a thread of its own (service-thread.ts): started from
// `workerData`, it says where it listens, and stops when told.
import { parentPort, workerData } from 'node:worker_threads'
import { startLocalService } from './index.js'
import type { LocalServiceInit } from './local-service.js'
import type { FromServiceThread, ToServiceThread } from './service-thread.js'
import { InternalError } from '../errors.js'

const port = parentPort
if (port === null) throw new InternalError('service-thread-worker runs only as a worker thread')
const post = (message: FromServiceThread): void => { port.postMessage(message) }

try {
  const service = await startLocalService(workerData as LocalServiceInit)
  const reclaims = new Map<number, AbortController>()
  port.on('message', (message: ToServiceThread) => {
    if (message.type === 'reclaim') {
      const { id } = message
      const abort = new AbortController()
      reclaims.set(id, abort)
      service.reclaim({ signal: abort.signal, onProgress: progress => { post({ type: 'reclaim-progress', id, progress }) } }).then(
        (result) => { reclaims.delete(id); post({ type: 'reclaimed', id, result }) },
        (err: unknown) => {
          reclaims.delete(id)
          const e = err as Error & { code?: unknown }
          post({ type: 'reclaim-failed', id, message: e.message, code: typeof e.code === 'string' ? e.code : undefined })
        })
      return
    }
    if (message.type === 'reclaim-abort') { reclaims.get(message.id)?.abort(); return }
    if (message.type === 'add') {
      const { id } = message
      service.addFile(message.request).then(
        (added) => { post({ type: 'added', id, added }) },
        (err: unknown) => {
          const e = err as Error & { status?: unknown, code?: unknown }
          post({ type: 'add-failed', id, message: e.message, status: typeof e.status === 'number' ? e.status : undefined, code: typeof e.code === 'string' ? e.code : undefined })
        })
      return
    }
    if (message.type !== 'stop') return
    service.stop().then(() => { post({ type: 'stopped' }) }, (err: Error) => { post({ type: 'stopped', error: err.message }) })
  })
  post({ type: 'started', url: service.url, adminTokenPath: service.adminTokenPath })
} catch (err) {
  const e = err as NodeJS.ErrnoException
  post({ type: 'failed', message: e.message, code: typeof e.code === 'string' ? e.code : undefined })
}
