import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename } from 'node:path'
import { Readable } from 'node:stream'
import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { CidBuilder, type CidProfile, type ObjectBlocks } from '../content/index.js'
import { IntegrityError, RemoteResponseError } from '../errors.js'
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
  /** Ignored over HTTP: the service hashes what it receives. */
  readonly blocks?: ObjectBlocks
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
  constructor (private readonly upload: HttpClient) {}

  async add (path: string, profile: CidProfile, options: UploadOptions = {}): Promise<{ cid: string, size: number }> {
    const { size } = await stat(path)
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

  /** Sends a CAR file to `/api/v0/dag/import` (see {@link importCarFile}); the caller checked its blocks. */
  async importCar (path: string, options: UploadOptions & Pick<CarUploadOptions, 'part' | 'pinRoots'> = {}): Promise<CarImported> {
    return await importCarFile(this.upload, path, options)
  }
}
