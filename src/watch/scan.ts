import { startWorker } from '../util/start-worker.js'
import { AbortedError, ScanFailedError } from '../errors.js'
import type { Described, ScanMessage, ScanRequest } from './scan-messages.js'

export interface ScanHandlers {
  /** Files whose size, mtime or profile differ from their row, or that have none. */
  onChanged (files: ReadonlyArray<readonly [path: string, size: number]>, scanned: number): void
  /** Entries whose rows change without hashing (links, directories, a mode moved). */
  onDescribed? (entries: readonly Described[]): void
  onUnreadable (path: string, code: string): void
  /** A FIFO, socket or device: nothing of it can be indexed. */
  onSpecial? (path: string, what: string): void
}

export interface ScanResult {
  readonly scanned: number
  /** Rows of this device whose files the scan did not find. */
  readonly missing: readonly string[]
}

/** Batches of changed files the scan thread may send ahead of the main thread's room for them. */
const CREDIT = 2

export interface ScanOptions {
  readonly signal?: AbortSignal
  /** The thread opens the index at once but walks only once this settles. */
  readonly after?: Promise<unknown>
  /**
   * Waited on after each batch of changed files is handled, before the thread may send another
   * (the hash pool's room): the scan walks no faster than its files are hashed.
   */
  readonly room?: () => Promise<void>
}

/** Runs one folder's startup scan on a thread of its own; aborting `signal` stops the thread at once. */
export async function scanFolder (request: Omit<ScanRequest, 'gate' | 'credit'>, handlers: ScanHandlers, options: ScanOptions = {}): Promise<ScanResult> {
  options.signal?.throwIfAborted()
  const gate = options.after === undefined ? undefined : new SharedArrayBuffer(4)
  const credit = new SharedArrayBuffer(4)
  Atomics.store(new Int32Array(credit), 0, CREDIT)
  const giveBack = (): void => {
    Atomics.add(new Int32Array(credit), 0, 1)
    Atomics.notify(new Int32Array(credit), 0)
  }
  const worker = startWorker(import.meta.url, 'scan-worker', { workerData: { ...request, gate, credit } satisfies ScanRequest })
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
          case 'changed':
            if (message.described.length > 0) handlers.onDescribed?.(message.described)
            handlers.onChanged(message.files, message.scanned)
            if (options.room === undefined) giveBack()
            else options.room().then(giveBack, giveBack)
            break
          case 'unreadable': handlers.onUnreadable(message.path, message.code); break
          case 'special': handlers.onSpecial?.(message.path, message.what); break
          case 'done': resolve({ scanned: message.scanned, missing: message.missing }); break
          case 'failed': reject(new ScanFailedError(`the scan of ${request.root} failed: ${message.message}: the folder is not fully indexed; fix that and restart the daemon, which scans it again`)); break
        }
      })
      worker.on('error', reject)
      worker.on('exit', code => reject(options.signal?.aborted === true
        ? new AbortedError(`the scan of ${request.root} was stopped`)
        : new ScanFailedError(`the scan of ${request.root} stopped early (its thread exited ${code}): the folder is not fully indexed; restart the daemon, which scans it again`)))
    })
  } finally {
    options.signal?.removeEventListener('abort', onAbort)
    await worker.terminate()
  }
}
