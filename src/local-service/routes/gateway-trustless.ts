import { createHash } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { carBytes, carPlan, dagBlocks, type ReadBlock } from './gateway-car.js'
import { trustlessDisposition } from './gateway-disposition.js'
import { CAR_TYPE, RAW_TYPE, parseDagScope, parseEntityBytes } from './gateway-format.js'
import { contentRange, requestedRange } from './gateway-range.js'
import { answeredNotModified, commonHeaders, contentLocation, head, lengthHeader, writeBody, type Answer } from './gateway-respond.js'

/** One block, as stored (a single `Range` of it too): its client checks it against its CID. */
export async function rawAnswer (a: Answer, negotiated: boolean): Promise<void> {
  const { cid, block } = a.end
  const etag = `"${cid.toString()}.raw"`
  const headers = {
    ...commonHeaders(a.end.roots, a.served),
    'content-type': RAW_TYPE,
    'content-disposition': trustlessDisposition(a.served.url, `${cid.toString()}.bin`),
    'accept-ranges': 'bytes',
    ...(negotiated ? contentLocation(a.served, 'raw') : {})
  }
  if (answeredNotModified(a.req, a.res, headers, etag)) return
  const range = requestedRange(a.req, a.res, block.byteLength, etag)
  const body = range === undefined ? block : block.subarray(range.from, range.to + 1)
  const sized = { ...headers, ...lengthHeader(body.byteLength, a.fault), ...(range === undefined ? {} : { 'content-range': contentRange(range, block.byteLength) }) }
  if (head(a.req, a.res, sized, etag, range === undefined ? 200 : 206)) await writeBody(a.res, [body], a.fault)
}

/** The blocks that prove the path (read again as they are sent: a path holds many), then the walk's. */
async function * withTrail (read: ReadBlock, trail: readonly CID[], walk: AsyncIterable<{ cid: CID, bytes: Uint8Array }>): AsyncGenerator<{ cid: CID, bytes: Uint8Array }> {
  // Identity blocks are never sent: their bytes are in the CID.
  for (const cid of trail) if (cid.multihash.code !== 0x00) yield { cid, bytes: await read(cid) }
  yield * walk
}

/** A CARv1 rooted at the URL's CID: the blocks along its path, then the end's DAG by `dag-scope`. */
export async function carAnswer (a: Answer, negotiated: boolean, dupsWanted: boolean): Promise<void> {
  const { cid, block, trail, roots } = a.end
  const scope = parseDagScope(a.served.url)
  const bytes = parseEntityBytes(a.served.url)
  const plan = carPlan(cid, block, scope, dupsWanted, bytes)
  const dups = dupsWanted ? 'y' : 'n'
  const headers = {
    ...commonHeaders(roots, a.served),
    'content-type': `${CAR_TYPE}; version=1; order=dfs; dups=${dups}`,
    'content-disposition': trustlessDisposition(a.served.url, `${a.root.toString()}.car`),
    'accept-ranges': 'none',
    ...(negotiated ? contentLocation(a.served, 'car') : {})
  }
  // The walk is deterministic (DFS, links in order), so the same request gives the same bytes;
  // a path's CAR holds its trail too, so its tag names every CID along it.
  const pathTag = trail.length === 0 ? '' : `.path-${createHash('sha256').update(roots.map(r => r.toString()).join('/')).digest('hex').slice(0, 16)}`
  const etag = `"${cid.toString()}.car.v1.dfs.dups-${dups}.${plan.scope}${bytes === undefined ? '' : `.bytes-${bytes.text}`}${pathTag}"`
  // Walked only once the head is out: a dag-scope the end's codec cannot have was refused above.
  if (!head(a.req, a.res, headers, etag)) return
  const walk = dagBlocks(a.read, cid, block, plan, a.limits, trail)
  await writeBody(a.res, carBytes(a.root, withTrail(a.read, trail, walk)), a.fault)
}
