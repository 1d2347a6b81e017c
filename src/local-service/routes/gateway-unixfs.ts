import type { CID } from 'multiformats/cid'
import { HttpFailure } from '../http.js'
import { fileSize } from './gateway-car.js'
import { typeByBytes, typeByName } from './gateway-content-type.js'
import { listEntries, listingEtag, listingHtml } from './gateway-directory.js'
import { fileDisposition, requestedFilename } from './gateway-disposition.js'
import { fileBytes } from './gateway-file.js'
import { childNamed, directoryOf, readOn, type ContentPath } from './gateway-path.js'
import { contentRange, requestedRange } from './gateway-range.js'
import { answeredNotModified, commonHeaders, head, lengthHeader, primed, writeBody, type Answer } from './gateway-respond.js'

/**
 * Types a browser runs script in. Served from the service's own origin they could use its API,
 * so they get an opaque origin of their own (CSP `sandbox` without `allow-same-origin`): their
 * requests then carry `Origin: null`, which the service refuses (host-guard.ts).
 */
const ACTIVE = /^(text\/html|image\/svg\+xml|application\/xml|text\/xml|application\/xhtml\+xml)\b/
const SANDBOX = 'sandbox allow-scripts allow-forms allow-popups allow-downloads'

const sandboxed = (type: string): Record<string, string> => ACTIVE.test(type) ? { 'content-security-policy': SANDBOX } : {}

/** The type of a file: by its name, else by its first bytes (read again from the start for a range that skips them). */
async function typeOf (a: Answer, cid: CID, block: Uint8Array, size: number, name: string | undefined, first: Uint8Array | undefined, fromStart: boolean): Promise<string> {
  const byName = typeByName(name)
  if (byName !== undefined) return byName
  if (fromStart || size === 0) return typeByBytes(first ?? new Uint8Array(0))
  try {
    const start = await primed(fileBytes(a.read, a.limits, cid, block, size, { from: 0, to: Math.min(511, size - 1) }), cid)
    await start.body.return(undefined)
    return typeByBytes(start.first ?? new Uint8Array(0))
  } catch {
    // The range asked may still be whole: only its type is unknown.
    return 'application/octet-stream'
  }
}

/** A UnixFS file (or one raw block) as bytes, a single `Range` of them as a 206, typed by name or content. */
async function fileAnswer (a: Answer, cid: CID, block: Uint8Array, name: string | undefined): Promise<void> {
  const size = fileSize(cid, block)
  if (size === undefined) throw new HttpFailure(400, `${cid.toString()} is not a file or a directory`)
  const { maxBytes } = a.limits
  if (size > maxBytes) throw new HttpFailure(413, `${cid.toString()} is a file of ${size} bytes, more than this gateway sends in one answer (${maxBytes}, [local_service] max_car_bytes)`)
  const etag = `"${cid.toString()}"`
  const disposition = fileDisposition(a.served.url, name)
  const base = { ...commonHeaders(a.end.roots, a.served), 'accept-ranges': 'bytes', ...(disposition === undefined ? {} : { 'content-disposition': disposition }) }
  if (answeredNotModified(a.req, a.res, base, etag)) return
  const range = requestedRange(a.req, a.res, size, etag)
  // The first bytes are read before the head: a block missing there is a 404, not a dropped connection.
  const { first, body } = await primed(fileBytes(a.read, a.limits, cid, block, size, range), cid)
  // The bytes sent are sniffed only when they are the file's first 512 (or all of it): a range elsewhere, or shorter, reads them.
  const fromStart = range === undefined || (range.from === 0 && range.to >= Math.min(511, size - 1))
  const type = await typeOf(a, cid, block, size, requestedFilename(a.served.url) ?? name, first, fromStart)
  const headers = {
    ...base,
    'content-type': type,
    ...sandboxed(type),
    ...lengthHeader(range === undefined ? size : range.to - range.from + 1, a.fault),
    ...(range === undefined ? {} : { 'content-range': contentRange(range, size) })
  }
  if (head(a.req, a.res, headers, etag, range === undefined ? 200 : 206)) await writeBody(a.res, body, a.fault)
  else await body.return(undefined)
}

/**
 * A directory: without its trailing `/` a 301 to it (relative links need it), then its
 * `index.html` when it has one, else a generated listing.
 */
async function directoryAnswer (a: Answer, path: ContentPath, dir: NonNullable<ReturnType<typeof directoryOf>>): Promise<void> {
  const { cid } = a.end
  const common = commonHeaders(a.end.roots, a.served)
  if (!path.trailingSlash) {
    a.res.writeHead(301, { ...common, location: `${a.served.url.pathname}/${a.served.url.search}`, 'content-length': '0' })
    a.res.end()
    return
  }
  const index = await childNamed(a.read, cid, dir, 'index.html', [], a.served.path)
  if (index !== undefined) {
    const block = await readOn(a.read, index, `${a.served.path}index.html`)
    if (fileSize(index, block) !== undefined) { await fileAnswer(a, index, block, 'index.html'); return }
  }
  const etag = listingEtag(cid)
  if (answeredNotModified(a.req, a.res, common, etag)) return
  const { entries, more } = await listEntries(a.read, cid, dir, a.served.path)
  const html = listingHtml(a.served.url.pathname, cid, entries, more)
  const type = 'text/html; charset=utf-8'
  if (head(a.req, a.res, { ...common, 'content-type': type, ...sandboxed(type), 'content-length': String(Buffer.byteLength(html)) }, etag)) a.res.end(html)
}

/** What a browser gets (no trustless format asked): a file's bytes, or a directory's page. */
export async function deserializedAnswer (a: Answer, path: ContentPath): Promise<void> {
  const dir = directoryOf(a.end.cid, a.end.block)
  if (dir !== undefined) await directoryAnswer(a, path, dir)
  else await fileAnswer(a, a.end.cid, a.end.block, path.segments.at(-1))
}
