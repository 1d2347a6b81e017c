import { startWorker } from '../util/start-worker.js'
import { AbortedError } from '../errors.js'
import type { ScanMessage, ScanRequest } from './scan-messages.js'

export interface ScanHandlers {
  /** Files whose size, mtime or profile differ from their row, or that have none. */
  onChanged (files: ReadonlyArray<readonly [path: string, size: number]>, scanned: number): void
  onUnreadable (path: string, code: string): void
}

export interface ScanResult {
  readonly scanned: number
  /** Rows of this device whose files the scan did not find. */
  readonly missing: readonly string[]
}

/**
 * Runs one folder's startup scan on a thread of its own; aborting `signal` stops the thread at
 * once. With `after`, the thread loads the rows at once but walks only once `after` settles.
 */
export async function scanFolder (request: ScanRequest, handlers: ScanHandlers, options: { signal?: AbortSignal, after?: Promise<unknown> } = {}): Promise<ScanResult> {
  options.signal?.throwIfAborted()
  const gate = options.after === undefined ? undefined : new SharedArrayBuffer(4)
  const worker = startWorker(import.meta.url, 'scan-worker', { workerData: { ...request, gate } })
  const open = (): void => {
    if (gate === undefined) return
    Atomics.store(new Int32Array(gate), 0, 1)
    Atomics.notify(new Int32Array(gate), 0)
  }
  options.after?.then(open, open)
  const onAbort = (): void => { void worker.terminate() }
  options.signal?.addEventListener('abort', onAbort, { once: true })
  try {
    return await new Promise<ScanResult>((resolve, reject) => {
      worker.on('message', (message: ScanMessage) => {
        switch (message.type) {
          case 'changed': handlers.onChanged(message.files, message.scanned); break
          case 'unreadable': handlers.onUnreadable(message.path, message.code); break
          case 'done': resolve({ scanned: message.scanned, missing: message.missing }); break
          case 'failed': reject(new Error(`the scan of ${request.root} failed: ${message.message}`)); break
        }
      })
      worker.on('error', reject)
      worker.on('exit', code => reject(options.signal?.aborted === true
        ? new AbortedError(`the scan of ${request.root} was stopped`)
        : new Error(`the scan of ${request.root} stopped early (exit ${code})`)))
    })
  } finally {
    options.signal?.removeEventListener('abort', onAbort)
    await worker.terminate()
  }
}
