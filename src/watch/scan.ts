import { startWorker } from '../util/start-worker.js'
import { AbortedError, ScanFailedError } from '../errors.js'
import type { Described, ScanMessage, ScanRequest } from './scan-messages.js'
import { scan } from './scan-walk.js'

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
  /**
   * A folder of at most this many entries is walked on this thread, not on a thread of its own
   * (whose start costs more than walking it): a command's, never a daemon's, whose event loop
   * never waits on a walk. Past it, the walk stops and the folder is walked on a thread.
   */
  readonly inlineEntries?: number
}

/**
 * Runs one folder's startup scan on a thread of its own, or a small one on this thread
 * (`inlineEntries`); aborting `signal` stops the thread at once.
 */
export async function scanFolder (request: Omit<ScanRequest, 'gate' | 'credit'>, handlers: ScanHandlers, options: ScanOptions = {}): Promise<ScanResult> {
  options.signal?.throwIfAborted()
  if (options.inlineEntries !== undefined && options.after === undefined) {
    const here = await scanHere(request, handlers, options, options.inlineEntries)
    if (here !== undefined) return here
  }
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
        tell(message, handlers)
        switch (message.type) {
          case 'changed':
            if (options.room === undefined) giveBack()
            else options.room().then(giveBack, giveBack)
            break
          case 'done': resolve({ scanned: message.scanned, missing: message.missing }); break
          case 'failed': reject(scanFailed(request.root, message.message)); break
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

/** What a message found, told to the handlers: the same from a thread's walk and from one here. */
function tell (message: ScanMessage, handlers: ScanHandlers): void {
  switch (message.type) {
    case 'changed':
      if (message.described.length > 0) handlers.onDescribed?.(message.described)
      handlers.onChanged(message.files, message.scanned)
      break
    case 'unreadable': handlers.onUnreadable(message.path, message.code); break
    case 'special': handlers.onSpecial?.(message.path, message.what); break
  }
}

const scanFailed = (root: string, why: string): ScanFailedError =>
  new ScanFailedError(`the scan of ${root} failed: ${why}: the folder is not fully indexed; fix that and restart the daemon, which scans it again`)

/** Never runs out: the walk on this thread is told everything it found at its end, not as it goes. */
const NO_LIMIT = 2 ** 30

/**
 * The walk on this thread, of at most `maxEntries` entries: its messages are kept, then told to
 * `handlers` as a thread's would be. Undefined when the folder is larger: nothing was told.
 */
async function scanHere (request: Omit<ScanRequest, 'gate' | 'credit'>, handlers: ScanHandlers, options: ScanOptions, maxEntries: number): Promise<ScanResult | undefined> {
  const credit = new SharedArrayBuffer(4)
  Atomics.store(new Int32Array(credit), 0, NO_LIMIT)
  const messages: ScanMessage[] = []
  try {
    scan({ ...request, credit, maxEntries }, message => { messages.push(message) })
  } catch (err) {
    throw scanFailed(request.root, (err as Error).message)
  }
  const last = messages.at(-1)
  if (last?.type !== 'done') return undefined
  for (const message of messages) {
    if (options.signal?.aborted === true) throw new AbortedError(`the scan of ${request.root} was stopped`)
    tell(message, handlers)
    if (message.type === 'changed') await options.room?.()
  }
  return { scanned: last.scanned, missing: last.missing }
}
