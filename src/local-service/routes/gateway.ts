import type { ServerResponse } from 'node:http'
import { UnixFS } from 'ipfs-unixfs'
import { CarWriter } from '@ipld/car'
import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import { HttpFailure, type Route } from '../http.js'
import { parseCid, type ServiceParts } from '../parts.js'
import { resolveIpns } from './ipns.js'
import type { Fault } from '../faults.js'

const RAW_CODE = 0x55

/** What the gateway may do wrong to a body, from the route's fault. */
export type BodyFault = Pick<Fault, 'truncate' | 'bitflip'> | undefined

async function * dagBlocks (parts: ServiceParts, root: CID): AsyncGenerator<{ cid: CID, bytes: Uint8Array }> {
  const pending = [root]
  while (pending.length > 0) {
    const cid = pending.shift() as CID
    const bytes = await parts.blocks.get(cid)
    yield { cid, bytes }
    if (cid.code === dagPb.code) for (const link of dagPb.decode(bytes).Links) pending.push(link.Hash)
  }
}

/** A UnixFS file's size, or undefined when the root is not a file. */
function fileSize (cid: CID, root: Uint8Array): number | undefined {
  if (cid.code === RAW_CODE) return root.byteLength
  if (cid.code !== dagPb.code) return undefined
  const node = dagPb.decode(root)
  if (node.Data === undefined) return undefined
  const unixfs = UnixFS.unmarshal(node.Data)
  return unixfs.type === 'file' || unixfs.type === 'raw' ? Number(unixfs.fileSize()) : undefined
}

/**
 * A file's bytes in order, one block read at a time as the response drains: memory stays at a
 * block however large the file. (ipfs-unixfs-exporter reads ahead without bound.)
 */
async function * fileBytes (parts: ServiceParts, cid: CID, block?: Uint8Array): AsyncGenerator<Uint8Array> {
  const bytes = block ?? await parts.blocks.get(cid)
  if (cid.code === RAW_CODE) {
    yield bytes
    return
  }
  const node = dagPb.decode(bytes)
  const data = node.Data === undefined ? undefined : UnixFS.unmarshal(node.Data).data
  if (data !== undefined && data.byteLength > 0) yield data
  for (const link of node.Links) yield * fileBytes(parts, link.Hash)
}

async function writeBody (res: ServerResponse, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, fault: BodyFault): Promise<void> {
  let first = true
  let sent = 0
  for await (const chunk of chunks) {
    let out = Buffer.from(chunk)
    if (first && fault?.bitflip === true && out.byteLength > 0) {
      out = Buffer.from(out)
      out[out.byteLength >> 1] = (out[out.byteLength >> 1] as number) ^ 0x01
    }
    first = false
    if (fault?.truncate === true && sent > 0) break
    sent += out.byteLength
    if (!res.write(out)) await new Promise(resolve => res.once('drain', resolve))
  }
  res.end()
}

async function serve (parts: ServiceParts, res: ServerResponse, cid: CID, format: string | null, head: boolean, fault: BodyFault): Promise<void> {
  if (!parts.blocks.has(cid)) throw new HttpFailure(404, `${cid.toString()} is not stored here`)
  if (format === 'raw') {
    res.writeHead(200, { 'content-type': 'application/vnd.ipld.raw', 'x-ipfs-roots': cid.toString() })
    if (head) { res.end(); return }
    await writeBody(res, [await parts.blocks.get(cid)], fault)
  } else if (format === 'car') {
    const { writer, out } = CarWriter.create([cid])
    res.writeHead(200, { 'content-type': 'application/vnd.ipld.car; version=1' })
    if (head) { res.end(); return }
    void (async () => {
      for await (const block of dagBlocks(parts, cid)) await writer.put(block)
      await writer.close()
    })()
    await writeBody(res, out, fault)
  } else if (format !== null && format !== '') {
    throw new HttpFailure(400, `unsupported format ${format.slice(0, 20)}: use raw or car`)
  } else {
    const root = await parts.blocks.get(cid)
    const size = fileSize(cid, root)
    if (size === undefined) throw new HttpFailure(400, `${cid.toString()} is not a file`)
    // A truncating fault sends no length, so the short body arrives whole and only its hash can tell.
    const length = fault?.truncate === true ? {} : { 'content-length': String(size) }
    res.writeHead(200, { 'content-type': 'application/octet-stream', ...length, 'x-ipfs-roots': cid.toString(), etag: `"${cid.toString()}"` })
    if (head) { res.end(); return }
    await writeBody(res, fileBytes(parts, cid, root), fault)
  }
}

/** The gateway: `/ipfs/<cid>` (the file, `?format=raw` one block, `?format=car` the DAG) and `/ipns/<id>/`. */
export function gatewayRoutes (parts: ServiceParts): Route[] {
  return [{
    name: 'gateway',
    methods: ['GET', 'HEAD'],
    path: /^\/ipfs\/([^/?]+)\/?$/,
    auth: 'none',
    handle: async ({ req, res, url, params, fault }) => {
      await serve(parts, res, parseCid(params[0] as string), url.searchParams.get('format'), req.method === 'HEAD', fault)
    }
  }, {
    name: 'gateway_ipns',
    methods: ['GET', 'HEAD'],
    path: /^\/ipns\/([^/?]+)\/?$/,
    auth: 'none',
    handle: async ({ req, res, url, params, fault }) => {
      const cid = resolveIpns(parts, params[0] as string)
      if (cid === undefined) throw new HttpFailure(404, `no record for ${(params[0] as string).slice(0, 80)}`)
      await serve(parts, res, parseCid(cid), url.searchParams.get('format'), req.method === 'HEAD', fault)
    }
  }]
}
