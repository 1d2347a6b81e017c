import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { CID } from 'multiformats/cid'
import type { Fault } from '../faults.js'
import { HttpFailure } from '../http.js'
import { CarWalkError, type CarLimits, type ReadBlock } from './gateway-car.js'
import type { Resolved } from './gateway-path.js'

/** What the gateway may do wrong to a body, from the route's fault. */
export type BodyFault = Pick<Fault, 'truncate' | 'bitflip'> | undefined

/** `Cache-Control` for everything under `/ipfs/`: its bytes can never change. */
export const IMMUTABLE = 'public, max-age=29030400, immutable'

/** What was asked, as the answer's headers name it. */
export interface Served {
  /** `X-Ipfs-Path`: the path as sent, before it was resolved. */
  readonly path: string
  readonly url: URL
  /** `Cache-Control`: {@link IMMUTABLE} under `/ipfs/`, the name's TTL under `/ipns/`. */
  readonly cacheControl: string
  /** When the name was last bound (`/ipns/` only): `Last-Modified`. */
  readonly lastModified?: number
}

/**
 * Sends the chunks as the client takes them: the next is pulled only once the socket drained,
 * and a client that goes away stops the walk (its generator is returned, nothing waits forever).
 */
export async function writeBody (res: ServerResponse, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, fault: BodyFault): Promise<void> {
  let first = true
  let sent = 0
  let closed = false
  res.once('close', () => { closed = true })
  for await (const chunk of chunks) {
    if (closed) return
    // A view, not a copy: every block read is sent as it was read (a copy of each cost a pass over every byte served).
    let out = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    if (first && fault?.bitflip === true && out.byteLength > 0) {
      out = Buffer.from(out)
      out[out.byteLength >> 1] = (out[out.byteLength >> 1] as number) ^ 0x01
    }
    first = false
    if (fault?.truncate === true && sent > 0) break
    sent += out.byteLength
    if (!res.write(out)) {
      const open = await new Promise<boolean>(resolve => {
        const done = (value: boolean) => () => { res.off('drain', onDrain); res.off('close', onClose); resolve(value) }
        const onDrain = done(true)
        const onClose = done(false)
        res.on('drain', onDrain)
        res.on('close', onClose)
      })
      if (!open) return
    }
  }
  res.end()
}

/**
 * A body whose first chunk is read before the head goes out. Until a byte is sent the answer
 * can still say what went wrong: a missing block is a 404 (this gateway holds all it ever
 * will), a block that is not what its CID says a 502. Once the head is out, only a cut stream.
 */
export async function primed (chunks: AsyncGenerator<Uint8Array>, what: CID): Promise<{ first: Uint8Array | undefined, body: AsyncGenerator<Uint8Array> }> {
  let first: IteratorResult<Uint8Array>
  try {
    first = await chunks.next()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      // The block store names the missing block; any other ENOENT (a pack file gone) is not the client's to read.
      const missing = /^block \S+ is not stored$/.test((err as Error).message) ? (err as Error).message : `a block of ${what.toString()} is not stored`
      throw new HttpFailure(404, `${missing} here: this gateway cannot send the content that needs it`)
    }
    if (err instanceof CarWalkError) throw new HttpFailure(502, err.message)
    throw err
  }
  async function * body (): AsyncGenerator<Uint8Array> {
    if (first.done === true) return
    yield first.value
    yield * chunks
  }
  return { first: first.done === true ? undefined : first.value, body: body() }
}

/** The `If-None-Match` check: a listed tag (weak or strong) or `*` that matches. */
export function notModified (req: IncomingMessage, etag: string): boolean {
  const header = req.headers['if-none-match']
  if (header === undefined) return false
  return header.split(',').map(t => t.trim().replace(/^W\//, '')).some(t => t === '*' || t === etag)
}

/**
 * Headers every answer of the gateway carries, whatever its format. `nosniff` on files too: an
 * identity CID's bytes come from the URL itself, and a browser must never take them for a page.
 */
export function commonHeaders (roots: readonly CID[], served: Served): OutgoingHttpHeaders {
  return {
    vary: 'Accept',
    'x-content-type-options': 'nosniff',
    'x-ipfs-path': served.path,
    'x-ipfs-roots': roots.map(r => r.toString()).join(','),
    'cache-control': served.cacheControl,
    ...(served.lastModified === undefined ? {} : { 'last-modified': new Date(served.lastModified).toUTCString() })
  }
}

/** Where the same answer lives with its format in the URL, for caches that key on the URL alone. */
export function contentLocation (served: Served, format: 'raw' | 'car'): OutgoingHttpHeaders {
  const params = new URLSearchParams(served.url.searchParams)
  params.set('format', format)
  return { 'content-location': `${served.url.pathname}?${params.toString()}` }
}

/** Answers 304 when `If-None-Match` names the tag: true when it did (nothing more to send). */
export function answeredNotModified (req: IncomingMessage, res: ServerResponse, headers: OutgoingHttpHeaders, etag: string): boolean {
  if (!notModified(req, etag)) return false
  const { 'content-length': _length, 'content-range': _range, ...rest } = headers
  res.writeHead(304, { ...rest, etag })
  res.end()
  return true
}

/** Writes the head, or a 304; false when no body follows. */
export function head (req: IncomingMessage, res: ServerResponse, headers: OutgoingHttpHeaders, etag: string, status = 200): boolean {
  if (answeredNotModified(req, res, headers, etag)) return false
  res.writeHead(status, { ...headers, etag })
  if (req.method === 'HEAD') { res.end(); return false }
  return true
}

/** `Content-Length`, but none under a truncating fault: the short body then arrives whole, and only its hash can tell. */
export function lengthHeader (n: number, fault: BodyFault): OutgoingHttpHeaders {
  return fault?.truncate === true ? {} : { 'content-length': String(n) }
}

/** One gateway request, once its path is resolved: what every kind of answer is made from. */
export interface Answer {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly read: ReadBlock
  readonly limits: CarLimits
  readonly served: Served
  /** The CID in the URL (or the one the name points to). */
  readonly root: CID
  /** Where its path led (the root itself when there is none). */
  readonly end: Resolved
  readonly fault: BodyFault
}
