import type { IncomingMessage, ServerResponse } from 'node:http'
import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import { HttpFailure, type Route } from '../http.js'
import { parseCid, type ServiceParts } from '../parts.js'
import { resolveIpns } from './ipns.js'
import type { ReadBlock } from './gateway-car.js'
import { chooseFormat, parseDagScope } from './gateway-format.js'
import { parseContentPath, resolvePath, type ContentPath, type Resolved } from './gateway-path.js'
import { IMMUTABLE, type BodyFault, type Served } from './gateway-respond.js'
import { carAnswer, rawAnswer } from './gateway-trustless.js'
import { deserializedAnswer } from './gateway-unixfs.js'

export type { BodyFault } from './gateway-respond.js'

/**
 * How long an `/ipns/` answer may be cached (`Cache-Control: max-age`): the TTL its record
 * would carry: its owner moves a name at every publish, so a short one, a minute.
 */
export const IPNS_TTL_SECONDS = 60

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
 * or `Accept`, as the IPFS path and trustless gateway specs say) and `/ipns/<id>[/<path>]` (the
 * same, for the CID a name points to).
 */
export function gatewayRoutes (parts: ServiceParts): Route[] {
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
      const name = params[0] as string
      const record = resolveIpns(parts, name)
      if (record === undefined) throw new HttpFailure(404, `no record for ${name.slice(0, 80)}`)
      const rest = restOf(url.pathname)
      const served = { path: `/ipns/${name}${rest}`, url, cacheControl: `public, max-age=${IPNS_TTL_SECONDS}`, lastModified: record.lastUpdate }
      await serve(parts, req, res, { root: parseCid(record.cid), path: parseContentPath(rest), served }, fault)
    }
  }]
}
