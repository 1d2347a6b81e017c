import type { Worker } from 'node:worker_threads'
import { startWorker } from '../util/start-worker.js'
import type { LocalServiceInit } from './local-service.js'
import type { InProcessAdd, InProcessAdded } from './add-in-process.js'
import type { ReclaimOptions, ReclaimProgress, ReclaimResult } from './reclaim.js'
import { openServiceDatabase, settingOr } from './store.js'
import { TokenIssuer } from './tokens.js'

/** Messages to and from the service's thread. */
export type ToServiceThread =
  | { readonly type: 'stop' }
  | { readonly type: 'add', readonly id: number, readonly request: InProcessAdd }
  | { readonly type: 'reclaim', readonly id: number }
  | { readonly type: 'reclaim-abort', readonly id: number }
export type FromServiceThread =
  | { readonly type: 'started', readonly url: string, readonly adminTokenPath: string | undefined }
  | { readonly type: 'failed', readonly message: string, readonly code: string | undefined }
  | { readonly type: 'stopped', readonly error?: string }
  | { readonly type: 'added', readonly id: number, readonly added: InProcessAdded }
  /** `status`: the upload route's answer (413 past the quota, 503 after a failed fsync); else the error's `code`. */
  | { readonly type: 'add-failed', readonly id: number, readonly message: string, readonly status: number | undefined, readonly code: string | undefined }
  | { readonly type: 'reclaim-progress', readonly id: number, readonly progress: ReclaimProgress }
  | { readonly type: 'reclaimed', readonly id: number, readonly result: ReclaimResult }
  /** `code`: the error's (`ERR_SERVICE_RECLAIM_BUSY` while another process reclaims). */
  | { readonly type: 'reclaim-failed', readonly id: number, readonly message: string, readonly code: string | undefined }

/** An in-process add the service refused or failed: `status` is what the upload route would have answered. */
export type AddFailure = Error & { readonly status?: number, readonly code?: string }

/** Its young generation: small, so the request buffers it drops are freed soon (peak RSS while storing). */
const YOUNG_MB = 4
/** How long a stop waits for the thread to close its server and flush its packs before ending it. */
const STOP_MS = 30_000

/** The local service in a thread of its own, as its starter sees it. */
export interface ServiceThread {
  readonly url: string
  readonly adminTokenPath: string | undefined
  /** A session token for the pointer service, issued in this thread with the service's own secret. */
  issueToken: (user: string, ttlSeconds: number) => string
  /**
   * Adds a file for this process as the upload route would, without HTTP (`LocalService.addFile`);
   * fails with an {@link AddFailure}.
   */
  addFile: (request: InProcessAdd) => Promise<InProcessAdded>
  /** Reclaims the space of deleted uploads in the service's thread (`LocalService.reclaim`); fails with the error's message and code. */
  reclaim: (options?: ReclaimOptions) => Promise<ReclaimResult>
  stop: () => Promise<void>
}

/**
 * Starts the local service in a worker thread: its imports hash, write and fsync every block
 * sent to it, which on the caller's thread stalled the caller's own reading, sealing and sending
 * (the embedded service of a first backup took half of the process's one busy thread). The
 * database is opened here first, so a damaged or unwritable data dir throws what it throws in
 * process, with its class; the token secret read then lets tokens be issued without a round trip.
 */
export async function startLocalServiceThread (init: LocalServiceInit): Promise<ServiceThread> {
  const db = await openServiceDatabase(init.dir)
  let tokens: TokenIssuer
  try {
    tokens = new TokenIssuer(Buffer.from(settingOr(db, 'token_secret', TokenIssuer.newSecret), 'base64url'))
  } finally {
    db.close()
  }
  const worker = startWorker(import.meta.url, 'service-thread-worker', { workerData: init, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_MB } })
  const started = await new Promise<Extract<FromServiceThread, { type: 'started' }>>((resolve, reject) => {
    const onMessage = (message: FromServiceThread): void => {
      if (message.type === 'started') { off(); resolve(message) }
      if (message.type === 'failed') { off(); reject(Object.assign(new Error(`the local service could not start: ${message.message}`), { code: message.code })) }
    }
    const onError = (err: Error): void => { off(); reject(err) }
    const onExit = (code: number): void => { off(); reject(new Error(`the local service's thread ended (code ${code}) before it listened`)) }
    const off = (): void => { worker.off('message', onMessage); worker.off('error', onError); worker.off('exit', onExit) }
    worker.on('message', onMessage)
    worker.once('error', onError)
    worker.once('exit', onExit)
  }).catch(async (err: unknown) => { await worker.terminate(); throw err })
  return {
    url: started.url,
    adminTokenPath: started.adminTokenPath,
    issueToken: (user, ttlSeconds) => tokens.issue(user, ttlSeconds),
    addFile: threadAdder(worker),
    reclaim: threadReclaimer(worker),
    stop: async () => { await stopThread(worker) }
  }
}

/** Adds through the thread: each answered by id; all still waiting fail if the thread ends. */
function threadAdder (worker: Worker): (request: InProcessAdd) => Promise<InProcessAdded> {
  const waiting = new Map<number, { resolve: (added: InProcessAdded) => void, reject: (err: AddFailure) => void }>()
  let next = 0
  let ended: string | undefined
  worker.on('message', (message: FromServiceThread) => {
    if (message.type !== 'added' && message.type !== 'add-failed') return
    const one = waiting.get(message.id)
    waiting.delete(message.id)
    if (message.type === 'added') one?.resolve(message.added)
    else one?.reject(Object.assign(new Error(message.message), { status: message.status, code: message.code }))
  })
  const end = (why: string): void => {
    ended ??= why
    for (const one of waiting.values()) one.reject(Object.assign(new Error(why), { status: 503 }))
    waiting.clear()
  }
  worker.once('exit', () => { end('the local service\'s thread ended before it answered') })
  worker.once('error', (err) => { end(`the local service's thread failed: ${err.message}`) })
  return async (request) => await new Promise<InProcessAdded>((resolve, reject) => {
    if (ended !== undefined) { reject(Object.assign(new Error(ended), { status: 503 })); return }
    const id = next++
    waiting.set(id, { resolve, reject })
    worker.postMessage({ type: 'add', id, request } satisfies ToServiceThread)
  })
}

/** Reclaims through the thread: its progress heard as it goes; aborted by a message; failed if the thread ends. */
function threadReclaimer (worker: Worker): (options?: ReclaimOptions) => Promise<ReclaimResult> {
  const waiting = new Map<number, { options: ReclaimOptions, resolve: (result: ReclaimResult) => void, reject: (err: Error) => void }>()
  let next = 0
  let ended: string | undefined
  worker.on('message', (message: FromServiceThread) => {
    if (message.type !== 'reclaim-progress' && message.type !== 'reclaimed' && message.type !== 'reclaim-failed') return
    const one = waiting.get(message.id)
    if (message.type === 'reclaim-progress') { one?.options.onProgress?.(message.progress); return }
    waiting.delete(message.id)
    if (message.type === 'reclaimed') one?.resolve(message.result)
    else one?.reject(Object.assign(new Error(message.message), { code: message.code }))
  })
  const end = (why: string): void => {
    ended ??= why
    for (const one of waiting.values()) one.reject(new Error(why))
    waiting.clear()
  }
  worker.once('exit', () => { end('the local service\'s thread ended before its reclaim did') })
  worker.once('error', (err) => { end(`the local service's thread failed: ${err.message}`) })
  return async (options = {}) => await new Promise<ReclaimResult>((resolve, reject) => {
    if (ended !== undefined) { reject(new Error(ended)); return }
    if (options.signal?.aborted === true) { reject(options.signal.reason as Error); return }
    const id = next++
    waiting.set(id, { options, resolve, reject })
    options.signal?.addEventListener('abort', () => { worker.postMessage({ type: 'reclaim-abort', id } satisfies ToServiceThread) }, { once: true })
    worker.postMessage({ type: 'reclaim', id } satisfies ToServiceThread)
  })
}

async function stopThread (worker: Worker): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  try {
    await new Promise<void>((resolve) => {
      const done = (): void => { resolve() }
      worker.on('message', (message: FromServiceThread) => { if (message.type === 'stopped') done() })
      worker.once('exit', done)
      worker.once('error', done)
      timer = setTimeout(done, STOP_MS)
      worker.postMessage({ type: 'stop' } satisfies ToServiceThread)
    })
  } finally {
    clearTimeout(timer)
    await worker.terminate()
  }
}
