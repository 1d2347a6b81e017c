import type { IncomingMessage, ServerResponse } from 'node:http'
import { HttpFailure } from '../http.js'

/** Bytes `from` to `to` of a file or block, both inclusive. */
export interface ByteRange { readonly from: number, readonly to: number }

/**
 * The one range a `Range` header asks of `size` bytes (RFC 9110, 14.1.2): `bytes=a-b`, `bytes=a-`
 * or `bytes=-n`, cut at the end. Undefined when the whole is to be sent: no header, a malformed
 * one, several ranges (the spec lets a gateway serve only one), or an `If-Range` naming another
 * version. A range that starts past the end is a 416 with `Content-Range: bytes *\/size`.
 */
export function requestedRange (req: IncomingMessage, res: ServerResponse, size: number, etag: string): ByteRange | undefined {
  const header = req.headers.range
  // Longer than any one range of 16-digit offsets: not a range this gateway serves.
  if (header === undefined || header.length > 64) return undefined
  const ifRange = req.headers['if-range']
  if (typeof ifRange === 'string' && ifRange.trim() !== etag) return undefined
  const m = /^\s*bytes\s*=\s*(\d{0,16})\s*-\s*(\d{0,16})\s*$/i.exec(header)
  if (m === null || (m[1] === '' && m[2] === '')) return undefined
  const first = m[1] === '' ? undefined : Number(m[1])
  const last = m[2] === '' ? undefined : Number(m[2])
  if (first !== undefined && last !== undefined && last < first) return undefined
  let range: ByteRange | undefined
  if (first === undefined) {
    const suffix = last as number
    if (suffix > 0 && size > 0) range = { from: Math.max(0, size - suffix), to: size - 1 }
  } else if (first < size) {
    range = { from: first, to: Math.min(last ?? size - 1, size - 1) }
  }
  if (range === undefined) {
    res.setHeader('content-range', `bytes */${size}`)
    res.setHeader('accept-ranges', 'bytes')
    throw new HttpFailure(416, `${header.trim()} asks for no byte of the ${size} there are`)
  }
  return range
}

/** `Content-Range` for a 206. */
export function contentRange (range: ByteRange, size: number): string {
  return `bytes ${range.from}-${range.to}/${size}`
}
