import type { IncomingMessage, ServerResponse } from 'node:http'
import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import { HttpFailure, type Route } from '../http.js'
import { ipfsCidOf, parseIpnsName } from '../../crypto/index.js'
import { IpnsRecords } from '../ipns-records.js'
import { parseCid, type ServiceParts } from '../parts.js'
import { recordCacheControl, sendIpnsRecord, wantsIpnsRecord } from './ipns-record-answer.js'
import type { ReadBlock } from './gateway-car.js'
import { chooseFormat, parseDagScope } from './gateway-format.js'
import { parseContentPath, resolvePath, type ContentPath, type Resolved } from './gateway-path.js'
import { IMMUTABLE, type BodyFault, type Served } from './gateway-respond.js'
import { carAnswer, rawAnswer } from './gateway-trustless.js'
import { deserializedAnswer } from './gateway-unixfs.js'

export type { BodyFault } from './gateway-respond.js'

function reader (parts: ServiceParts): ReadBlock {
  return async cid => cid.multihash.code === 0x00 ? cid.multihash.digest : await parts.blocks.get(cid)
}

const stored = (parts: ServiceParts, cid: CID): boolean => cid.multihash.code === 0x00 || parts.blocks.has(cid)

/**
 * A 502 when the block stored under a dag-pb CID is not dag-pb: the bytes this service holds for it cannot
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

interface Target { readonly root: CID, readonly path: ContentPath, readonly served: Served }

async function serve (parts: ServiceParts, req: IncomingMessage, res: ServerResponse, target: Target, fault: BodyFault): Promise<void> {
  const { root, path, served } = target
  const choice = chooseFormat(served.url, req.headers.accept)
  // The path gateway spec: a service worker may claim `/ipfs/<cid>/`, never the whole of `/ipfs/<cid>`.
  if (req.headers['service-worker'] === 'script' && path.segments.length === 0 && !path.trailingSlash) throw new HttpFailure(400, 'a service worker may register only under a trailing /')
  if (!stored(parts, root)) {
    // Only what is here can ever be served: asked for what is cached only, the spec's answer is 412.
    if (/\bonly-if-cached\b/i.test(req.headers['cache-control'] ?? '')) throw new HttpFailure(412, `${root.toString()} is not stored here`)
    throw new HttpFailure(404, `${root.toString()} is not stored here`)
  }
  const read = reader(parts)
  const rootBlock = await read(root)
  let end: Resolved = { cid: root, block: rootBlock, roots: [root], trail: [] }
  if (path.segments.length > 0) {
    decodableRoot(root, rootBlock)
    end = await resolvePath(read, root, rootBlock, path.segments, served.path)
  }
  // Only the raw block itself is served without reading it: its client checks it.
  if (choice.kind !== 'raw' && !(choice.kind === 'car' && parseDagScope(served.url) === 'block')) decodableRoot(end.cid, end.block)
  const answer = { req, res, read, limits: parts.carLimits, served, root, end, fault }
  if (choice.kind === 'raw') await rawAnswer(answer, choice.negotiated)
  else if (choice.kind === 'car') await carAnswer(answer, choice.negotiated, choice.dups)
  else await deserializedAnswer(answer, path)
}

/** The path after `/ipfs/<cid>` or `/ipns/<name>`, as sent (percent-encoded). */
function restOf (pathname: string): string {
  const after = pathname.indexOf('/', pathname.indexOf('/', 1) + 1)
  return after < 0 ? '' : pathname.slice(after)
}

/**
 * The gateway: `/ipfs/<cid>[/<path>]` (the file or directory; a raw block or a CAR by `?format=`
 * or `Accept`, as the IPFS path and trustless gateway specs say) and `/ipns/<name>[/<path>]` (the
 * same, for the CID the name's signed record points to; the record itself by
 * `?format=ipns-record` or `Accept: application/vnd.ipfs.ipns-record`).
 */
export function gatewayRoutes (parts: ServiceParts): Route[] {
  const records = new IpnsRecords(parts.db, parts.now)
  return [{
    name: 'gateway',
    methods: ['GET', 'HEAD'],
    path: /^\/ipfs\/([^/?]+)(?:\/.*)?$/,
    auth: 'none',
    handle: async ({ req, res, url, params, fault }) => {
      const root = parseCid(params[0] as string)
      const rest = restOf(url.pathname)
      const served = { path: `/ipfs/${root.toString()}${rest}`, url, cacheControl: IMMUTABLE }
      await serve(parts, req, res, { root, path: parseContentPath(rest), served }, fault)
    }
  }, {
    name: 'gateway_ipns',
    methods: ['GET', 'HEAD'],
    path: /^\/ipns\/([^/?]+)(?:\/.*)?$/,
    auth: 'none',
    handle: async ({ req, res, url, params, fault }) => {
      const text = params[0] as string
      const name = parseIpnsName(text)
      if (name === undefined) throw new HttpFailure(400, `${text.slice(0, 80)} is not an IPNS name this gateway resolves: give a libp2p-key CID (k51..., bafz...) or a peer id`)
      const record = await records.current(name)
      if (record === undefined) throw new HttpFailure(404, `no record for ${name.text} here`)
      const rest = restOf(url.pathname)
      if (wantsIpnsRecord(url, req.headers.accept)) {
        if (rest !== '' && rest !== '/') throw new HttpFailure(400, 'an IPNS record is asked for by the name alone, with no path after it')
        sendIpnsRecord(req, res, record, { 'content-disposition': `attachment; filename="${name.text}.ipns-record"`, 'x-ipfs-path': `/ipns/${name.text}` })
        return
      }
      const root = ipfsCidOf(record.value)
      if (root === undefined) throw new HttpFailure(502, `the record for ${name.text} points at ${JSON.stringify(record.value.slice(0, 100))}, which this gateway does not follow`)
      const served = { path: `/ipns/${text}${rest}`, url, cacheControl: recordCacheControl(record), lastModified: record.lastUpdate }
      await serve(parts, req, res, { root, path: parseContentPath(rest), served }, fault)
    }
  }]
}
