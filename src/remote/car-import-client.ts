import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename } from 'node:path'
import { Readable } from 'node:stream'
import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import { RemoteResponseError } from '../errors.js'
import type { HttpClient } from './http-client.js'
import { ANSWER_LIMITS, parseBody, readBounded } from './body.js'
import { canonicalCid } from './cid-text.js'

/** What a CAR upload takes (as a file upload does, less what only `add` uses). */
export interface CarUploadOptions {
  readonly signal?: AbortSignal
  /** `false`: one attempt only. */
  readonly retry?: false
  /** Told of the bytes sent so far. */
  readonly onProgress?: (sent: number, total: number) => void
  /** Awaited before each read of the file goes out: a rate limit holds the body back here. */
  readonly throttle?: (bytes: number, signal?: AbortSignal) => Promise<void>
  /**
   * Only the sections from `start` to `end` of a CARv1, sent as a CAR of their own under `header`
   * (a CARv1 header naming the root); `pinRoots` false for every part but the last, whose DAG is
   * whole only once all are in.
   */
  readonly part?: { readonly start: number, readonly end: number, readonly header: Uint8Array, readonly pinRoots: boolean }
  /** A whole CAR's `pin-roots` (a part says its own); the service's default when not given. */
  readonly pinRoots?: boolean
}

const READ_BYTES = 1024 * 1024

function pinRoots (options: CarUploadOptions): boolean | undefined {
  return options.part?.pinRoots ?? options.pinRoots
}

const rootLineSchema = z.object({ Root: z.object({ Cid: z.object({ '/': z.string() }), PinErrorMsg: z.string().optional() }) })
const statsLineSchema = z.object({ Stats: z.object({ BlockCount: z.number().int().nonnegative(), BlockBytesCount: z.number().int().nonnegative() }) })

/** What the service said of an imported CAR. */
export interface CarImported {
  /** The CAR's roots as the service read them, each with why it could not pin it ('' when it did). */
  readonly roots: ReadonlyArray<{ readonly cid: string, readonly pinError: string }>
  /** Blocks and bytes it read, when it says (Kubo with `stats=true`). */
  readonly stats: { readonly blocks: number, readonly bytes: number } | undefined
}

/**
 * Sends a CAR file to Kubo's `/api/v0/dag/import` as one streamed multipart part (never held in
 * memory; a retried attempt reads the file again), and reads the service's NDJSON answer.
 */
export async function importCarFile (upload: HttpClient, path: string, options: CarUploadOptions = {}): Promise<CarImported> {
  const { part } = options
  const size = part === undefined ? (await stat(path)).size : part.header.byteLength + part.end - part.start
  const boundary = `cidsync-${randomBytes(12).toString('hex')}`
  const name = basename(path).replace(/["\r\n]/g, '_')
  const body = (): Readable => Readable.from((async function * () {
    let sent = 0
    yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/vnd.ipld.car\r\n\r\n`)
    if (part !== undefined) yield Buffer.from(part.header)
    // `end` is inclusive in createReadStream; a part holds at least one section.
    const range = part === undefined ? {} : { start: part.start, end: part.end - 1 }
    for await (const chunk of createReadStream(path, { highWaterMark: READ_BYTES, ...range })) {
      if (options.throttle !== undefined) await options.throttle((chunk as Buffer).byteLength, options.signal)
      sent += (chunk as Buffer).byteLength
      options.onProgress?.(sent, size)
      yield chunk as Buffer
    }
    yield Buffer.from(`\r\n--${boundary}--\r\n`)
  })(), { objectMode: false })
  const request = { method: 'POST' as const, path: '/api/v0/dag/import', query: { stats: 'true', ...(pinRoots(options) === undefined ? {} : { 'pin-roots': String(pinRoots(options)) }) }, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body, signal: options.signal, ...(options.retry === false ? { retry: false } : {}) }
  const response = await upload.send(request)
  const context = { service: 'upload endpoint', method: 'POST', url: upload.url(request).toString() }
  const text = (await readBounded(response.body, response.headers, context, ANSWER_LIMITS.small)).toString('utf8')
  const roots: Array<{ cid: string, pinError: string }> = []
  let stats: CarImported['stats']
  for (const line of text.split('\n').map(l => l.trim()).filter(l => l !== '')) {
    if (line.startsWith('{"Stats"')) {
      const s = parseBody(context, line, statsLineSchema).Stats
      stats = { blocks: s.BlockCount, bytes: s.BlockBytesCount }
      continue
    }
    const root = parseBody(context, line, rootLineSchema).Root
    let cid: string
    try {
      cid = canonicalCid(root.Cid['/'])
    } catch {
      throw new RemoteResponseError(context, `answered with a malformed root CID ${root.Cid['/'].slice(0, 100)}`)
    }
    roots.push({ cid, pinError: root.PinErrorMsg ?? '' })
  }
  return { roots, stats }
}
