import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http'
import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import { HttpFailure, type Route } from '../http.js'
import { parseCid, type ServiceParts } from '../parts.js'
import { resolveIpns } from './ipns.js'
import type { Fault } from '../faults.js'
import { carBytes, carPlan, dagBlocks, fileSize, type ReadBlock } from './gateway-car.js'
import { fileBytes } from './gateway-file.js'
import { CAR_TYPE, RAW_TYPE, chooseFormat, parseDagScope, parseEntityBytes, type GatewayChoice } from './gateway-format.js'

/** What the gateway may do wrong to a body, from the route's fault. */
export type BodyFault = Pick<Fault, 'truncate' | 'bitflip'> | undefined

/** `Cache-Control` for everything under `/ipfs/`: its bytes can never change. */
const IMMUTABLE = 'public, max-age=29030400, immutable'

function reader (parts: ServiceParts): ReadBlock {
  return async cid => cid.multihash.code === 0x00 ? cid.multihash.digest : await parts.blocks.get(cid)
}

const stored = (parts: ServiceParts, cid: CID): boolean => cid.multihash.code === 0x00 || parts.blocks.has(cid)

/**
 * A 502 when the block under a dag-pb CID is not dag-pb: the bytes this service holds for it cannot
 * be the file or DAG asked for (a damaged data dir, or an upload that was never a DAG), which is
 * the content's fault, not a failure of the service to explain with "Something went wrong".
 */
function decodableRoot (cid: CID, root: Uint8Array): void {
  if (cid.code !== dagPb.code) return
  try {
    dagPb.decode(root)
  } catch (err) {
    throw new HttpFailure(502, `the block stored under ${cid.toString()} is not valid dag-pb, as its CID says it is (${(err as Error).message.slice(0, 120)}): this service cannot serve it as a file or DAG; ask ?format=raw for the block itself`)
  }
}

/**
 * Sends the chunks as the client takes them: the next is pulled only once the socket drained,
 * and a client that goes away stops the walk (its generator is returned, nothing waits forever).
 */
async function writeBody (res: ServerResponse, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, fault: BodyFault): Promise<void> {
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

/** The `If-None-Match` check: a listed tag (weak or strong) or `*` that matches. */
function notModified (req: IncomingMessage, etag: string): boolean {
  const header = req.headers['if-none-match']
  if (header === undefined) return false
  return header.split(',').map(t => t.trim().replace(/^W\//, '')).some(t => t === '*' || t === etag)
}

interface Served { readonly path: string, readonly immutable: boolean, readonly url: URL }

/**
 * Headers every answer of the gateway carries, whatever its format. `nosniff` on files too: an
 * identity CID's bytes come from the URL itself, and a browser must never take them for a page.
 */
function commonHeaders (cid: CID, served: Served): OutgoingHttpHeaders {
  return {
    vary: 'Accept',
    'x-content-type-options': 'nosniff',
    'x-ipfs-path': served.path,
    'x-ipfs-roots': cid.toString(),
    ...(served.immutable ? { 'cache-control': IMMUTABLE } : {})
  }
}

/** Where the same answer lives with its format in the URL, for caches that key on the URL alone. */
function contentLocation (served: Served, format: 'raw' | 'car'): OutgoingHttpHeaders {
  const params = new URLSearchParams(served.url.searchParams)
  params.set('format', format)
  return { 'content-location': `${served.url.pathname}?${params.toString()}` }
}

/** Writes the head, or a 304; false when no body follows. */
function head (req: IncomingMessage, res: ServerResponse, headers: OutgoingHttpHeaders, etag: string): boolean {
  if (notModified(req, etag)) {
    const { 'content-length': _length, ...rest } = headers
    res.writeHead(304, { ...rest, etag })
    res.end()
    return false
  }
  res.writeHead(200, { ...headers, etag })
  if (req.method === 'HEAD') { res.end(); return false }
  return true
}

async function serve (parts: ServiceParts, req: IncomingMessage, res: ServerResponse, cid: CID, served: Served, fault: BodyFault): Promise<void> {
  const choice: GatewayChoice = chooseFormat(served.url, req.headers.accept)
  if (!stored(parts, cid)) {
    // Only what is here can ever be served: asked for what is cached only, the spec's answer is 412.
    if (/\bonly-if-cached\b/i.test(req.headers['cache-control'] ?? '')) throw new HttpFailure(412, `${cid.toString()} is not stored here`)
    throw new HttpFailure(404, `${cid.toString()} is not stored here`)
  }
  const read = reader(parts)
  const root = await read(cid)
  // Only the raw block itself is served without reading it: its client checks it.
  if (choice.kind !== 'raw' && !(choice.kind === 'car' && parseDagScope(served.url) === 'block')) decodableRoot(cid, root)
  const common = commonHeaders(cid, served)
  // A truncating fault sends no length, so the short body arrives whole and only its hash can tell.
  const length = (n: number): OutgoingHttpHeaders => fault?.truncate === true ? {} : { 'content-length': String(n) }
  if (choice.kind === 'raw') {
    const headers = {
      ...common,
      'content-type': RAW_TYPE,
      'content-disposition': `attachment; filename="${cid.toString()}.bin"`,
      ...length(root.byteLength),
      ...(choice.negotiated ? contentLocation(served, 'raw') : {})
    }
    if (head(req, res, headers, `"${cid.toString()}.raw"`)) await writeBody(res, [root], fault)
  } else if (choice.kind === 'car') {
    const scope = parseDagScope(served.url)
    const bytes = parseEntityBytes(served.url)
    const plan = carPlan(cid, root, scope, choice.dups, bytes)
    const dups = choice.dups ? 'y' : 'n'
    const headers = {
      ...common,
      'content-type': `${CAR_TYPE}; version=1; order=dfs; dups=${dups}`,
      'content-disposition': `attachment; filename="${cid.toString()}.car"`,
      'accept-ranges': 'none',
      ...(choice.negotiated ? contentLocation(served, 'car') : {})
    }
    // The walk is deterministic (DFS, links in order), so the same request gives the same bytes.
    const etag = `"${cid.toString()}.car.v1.dfs.dups-${dups}.${plan.scope}${bytes === undefined ? '' : `.bytes-${bytes.text}`}"`
    // Walked only once the head is out: a dag-scope the root's codec cannot have was refused above.
    if (head(req, res, headers, etag)) await writeBody(res, carBytes(cid, dagBlocks(read, cid, root, plan, parts.carLimits)), fault)
  } else {
    const size = fileSize(cid, root)
    if (size === undefined) throw new HttpFailure(400, `${cid.toString()} is not a file`)
    const { maxBytes } = parts.carLimits
    if (size > maxBytes) throw new HttpFailure(413, `${cid.toString()} is a file of ${size} bytes, more than this gateway sends in one answer (${maxBytes}, [local_service] max_car_bytes)`)
    const headers = { ...common, 'content-type': 'application/octet-stream', ...length(size) }
    if (head(req, res, headers, `"${cid.toString()}"`)) await writeBody(res, fileBytes(read, parts.carLimits, cid, root, size), fault)
  }
}

/**
 * The gateway: `/ipfs/<cid>` (the file; a raw block or a CAR by `?format=` or `Accept`, as the
 * IPFS trustless gateway spec says) and `/ipns/<id>/` (the same, for the CID a name points to).
 */
export function gatewayRoutes (parts: ServiceParts): Route[] {
  return [{
    name: 'gateway',
    methods: ['GET', 'HEAD'],
    path: /^\/ipfs\/([^/?]+)\/?$/,
    auth: 'none',
    handle: async ({ req, res, url, params, fault }) => {
      const cid = parseCid(params[0] as string)
      await serve(parts, req, res, cid, { path: `/ipfs/${cid.toString()}`, immutable: true, url }, fault)
    }
  }, {
    name: 'gateway_ipns',
    methods: ['GET', 'HEAD'],
    path: /^\/ipns\/([^/?]+)\/?$/,
    auth: 'none',
    handle: async ({ req, res, url, params, fault }) => {
      const name = params[0] as string
      const cid = resolveIpns(parts, name)
      if (cid === undefined) throw new HttpFailure(404, `no record for ${name.slice(0, 80)}`)
      await serve(parts, req, res, parseCid(cid), { path: `/ipns/${name}`, immutable: false, url }, fault)
    }
  }]
}
