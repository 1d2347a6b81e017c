import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename } from 'node:path'
import { Readable } from 'node:stream'
import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { CidBuilder, type CidProfile, type ObjectBlocks } from '../content/index.js'
import { AbortedError, IntegrityError, RemoteBadRequestError, RemoteResponseError, RemoteStatusError, type RemoteContext } from '../errors.js'
import type { HttpClient } from './http-client.js'
import { ANSWER_LIMITS, parseBody, readBounded } from './body.js'
import { uploadAnswerSchema } from './schemas.js'
import type { CallOptions } from './deals-client.js'
import { importCarFile, type CarImported, type CarUploadOptions } from './car-import-client.js'

const READ_BYTES = 1024 * 1024
const KUBO_DEFAULT_LINKS = 174

export interface UploadOptions extends CallOptions {
  /** `false`: one attempt only (a caller that checks for a lost answer before sending again). */
  readonly retry?: false
  /** Told of the bytes sent so far. */
  readonly onProgress?: (sent: number, total: number) => void
  /** Awaited before each read of the file goes out: a rate limit holds the body back here. */
  readonly throttle?: (bytes: number, signal?: AbortSignal) => Promise<void>
  /**
   * The CID the file's bytes were hashed to as they were written (a sealed object): not hashed
   * again as it is sent; the service's answer must still equal it.
   */
  readonly expectedCid?: string
  /** The name the uploads listing shows; the file's own name when not given. */
  readonly name?: string
  /**
   * The object's blocks as they were hashed with `expectedCid` their root: a service in this
   * process stores them without hashing them again (ignored over HTTP).
   */
  readonly blocks?: ObjectBlocks
}

/**
 * The upload endpoint of a service running in this process (the embedded one): adds a file
 * without HTTP and answers what `add` would. A refusal carries the route's `status` (413 past a
 * quota, 503 after a failed fsync).
 */
export type InProcessUpload = (path: string, profile: CidProfile, options: { readonly expectedCid?: string, readonly blocks?: ObjectBlocks, readonly name?: string }) => Promise<{ cid: string, size: number }>

/** What an in-process refusal would have been over HTTP, as `HttpClient` makes it from a status. */
function refusal (context: RemoteContext, err: unknown): Error {
  const e = err as Error & { status?: unknown, code?: unknown }
  const status = typeof e.status === 'number' ? e.status : 500
  const excerpt = typeof e.status === 'number' || typeof e.code !== 'string' ? e.message : `${e.code}: ${e.message}`
  if (status === 400 || status === 422) return new RemoteBadRequestError(context, status, excerpt, '')
  if (status === 429) return new RemoteStatusError(context, status, excerpt, 'the service is limiting requests: try again later')
  return new RemoteStatusError(context, status, excerpt, status >= 500 ? 'the service failed: try again later' : '')
}

/** Kubo's `add` parameters for a profile, named explicitly: a server's defaults may differ. */
export function addQuery (profile: CidProfile): Record<string, string> {
  return {
    'cid-version': String(profile.cidVersion),
    'raw-leaves': String(profile.rawLeaves),
    chunker: `size-${profile.chunkSize}`,
    'wrap-with-directory': 'false',
    ...(profile.maxLinks === KUBO_DEFAULT_LINKS ? {} : { 'max-file-links': String(profile.maxLinks) })
  }
}

/**
 * The root's entry in an `add` answer: one JSON object, a JSON array of them, or NDJSON (Kubo:
 * one object a line); the root is the last.
 */
function lastEntry (text: string): string | undefined {
  try {
    const whole = JSON.parse(text) as unknown
    if (Array.isArray(whole)) return whole.length === 0 ? undefined : JSON.stringify(whole.at(-1))
    return text
  } catch {
    return text.split('\n').map(l => l.trim()).filter(l => l !== '').at(-1)
  }
}

/**
 * Uploads a file to a Kubo-compatible `add` endpoint as a streamed multipart body (never held in
 * memory), computing its CID on the way, and refuses an answer whose CID differs from ours.
 */
export class UploadClient {
  /** @param inProcess - the service runs in this process: files are added through it, not over HTTP. */
  constructor (private readonly upload: HttpClient, private readonly inProcess?: InProcessUpload) {}

  async add (path: string, profile: CidProfile, options: UploadOptions = {}): Promise<{ cid: string, size: number }> {
    const { size } = await stat(path)
    if (this.inProcess !== undefined) return await this.addInProcess(this.inProcess, path, size, profile, options)
    const computed: { cid?: CID } = {}
    const boundary = `cidsync-${randomBytes(12).toString('hex')}`
    const name = (options.name ?? basename(path)).replace(/["\r\n]/g, '_')
    const expected = options.expectedCid === undefined ? undefined : CID.parse(options.expectedCid)
    const body = (): Readable => Readable.from((async function * () {
      const builder = expected === undefined ? new CidBuilder(profile) : undefined
      let sent = 0
      yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`)
      for await (const chunk of createReadStream(path, { highWaterMark: READ_BYTES })) {
        if (options.throttle !== undefined) await options.throttle((chunk as Buffer).byteLength, options.signal)
        builder?.update(chunk as Buffer)
        sent += (chunk as Buffer).byteLength
        options.onProgress?.(sent, size)
        yield chunk as Buffer
      }
      yield Buffer.from(`\r\n--${boundary}--\r\n`)
      computed.cid = builder?.finish() ?? expected
    })(), { objectMode: false })
    const request = { method: 'POST' as const, path: '/api/v0/add', query: addQuery(profile), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body, signal: options.signal, ...(options.retry === false ? { retry: false } : {}) }
    const response = await this.upload.send(request)
    const context = { service: 'upload endpoint', method: 'POST', url: this.upload.url(request).toString() }
    const root = lastEntry((await readBounded(response.body, response.headers, context, ANSWER_LIMITS.small)).toString('utf8'))
    if (root === undefined) throw new RemoteResponseError(context, 'answered with an empty body')
    const answer = parseBody(context, root, uploadAnswerSchema)
    const local = computed.cid
    if (local === undefined) throw new RemoteResponseError(context, 'answered before the whole file was sent')
    let remote: CID
    try {
      remote = CID.parse(answer.Hash)
    } catch {
      throw new RemoteResponseError(context, `answered with a malformed CID ${answer.Hash.slice(0, 100)}`)
    }
    if (remote.toString() !== local.toString()) {
      throw new IntegrityError(`the upload endpoint computed ${answer.Hash} for ${path}, cidsync computed ${local.toString()}: the service imported with other parameters than ${profile.name}`)
    }
    return { cid: local.toString(), size }
  }

  /**
   * {@link add} through the service in this process: the rate limit still holds the bytes back,
   * and an answer that is not `expectedCid` is refused as over HTTP.
   */
  private async addInProcess (send: InProcessUpload, path: string, size: number, profile: CidProfile, options: UploadOptions): Promise<{ cid: string, size: number }> {
    const request = { method: 'POST' as const, path: '/api/v0/add', query: addQuery(profile) }
    const context = { service: 'upload endpoint', method: 'POST', url: `${this.upload.url(request).toString()} (in process)` }
    const aborted = (): boolean => options.signal?.aborted === true
    if (options.throttle !== undefined) for (let at = 0; at < size; at += READ_BYTES) await options.throttle(Math.min(READ_BYTES, size - at), options.signal)
    if (aborted()) throw new AbortedError(`${context.method} ${context.url} was aborted`)
    let answer: { cid: string, size: number }
    try {
      answer = await send(path, profile, { expectedCid: options.expectedCid, blocks: options.blocks, name: options.name })
    } catch (err) {
      throw refusal(context, err)
    }
    options.onProgress?.(size, size)
    if (options.expectedCid !== undefined && answer.cid !== CID.parse(options.expectedCid).toString()) {
      throw new IntegrityError(`the upload endpoint computed ${answer.cid} for ${path}, cidsync computed ${options.expectedCid}: the service imported with other parameters than ${profile.name}`)
    }
    return { cid: answer.cid, size }
  }

  /** Sends a CAR file to `/api/v0/dag/import` (see {@link importCarFile}); the caller checked its blocks. */
  async importCar (path: string, options: UploadOptions & Pick<CarUploadOptions, 'part'> = {}): Promise<CarImported> {
    return await importCarFile(this.upload, path, options)
  }
}
