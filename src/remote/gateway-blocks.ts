import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { decodeFileNode } from '../content/index.js'
import { IntegrityError } from '../errors.js'
import type { HttpClient } from './http-client.js'
import { readBounded } from './body.js'

const RAW_CODE = 0x55
const IDENTITY = 0x00

/** The largest block a gateway may send (the spec's bitswap limit); a bigger one is not a block. */
export const MAX_BLOCK_BYTES = 2 * 1024 * 1024

/** Deeper than this, a UnixFS file's DAG is not one cidsync made (its files are a few levels deep). */
const MAX_DEPTH = 64

export interface BlockFetchOptions {
  readonly signal?: AbortSignal
  readonly deadlineMs?: number
}

/** One block by `?format=raw` (IPFS trustless gateway), refused unless it hashes to its CID. */
async function fetchBlock (gateway: HttpClient, cid: CID, options: BlockFetchOptions): Promise<Uint8Array> {
  if (cid.multihash.code === IDENTITY) return cid.multihash.digest
  const request = { method: 'GET' as const, path: `/ipfs/${cid.toString()}`, query: { format: 'raw' }, auth: false, signal: options.signal, headers: { accept: 'application/vnd.ipld.raw' }, deadlineMs: options.deadlineMs }
  const response = await gateway.send(request)
  const bytes = await readBounded(response.body, response.headers, gateway.context(request), MAX_BLOCK_BYTES)
  if (cid.multihash.code !== sha256.code) throw new IntegrityError(`block ${cid.toString()} uses a hash cidsync cannot check (0x${cid.multihash.code.toString(16)})`)
  const digest = await sha256.digest(bytes)
  if (!Buffer.from(digest.bytes).equals(Buffer.from(cid.multihash.bytes))) {
    throw new IntegrityError(`block ${cid.toString()} from ${gateway.url({ path: '' }).origin} does not hash to its CID`)
  }
  return bytes
}

/**
 * A UnixFS file's bytes in order, put together from raw blocks a trustless gateway sends (one
 * that does not serve whole files), each checked against its CID before it is used: only bytes
 * reachable from `root` through verified blocks come out. One block is fetched at a time, as the
 * consumer pulls.
 */
export async function * verifiedFileBytes (gateway: HttpClient, root: CID, options: BlockFetchOptions = {}): AsyncGenerator<Uint8Array> {
  const stack: Array<{ links: CID[], at: number }> = []
  const visit = async (cid: CID): Promise<Uint8Array | undefined> => {
    const bytes = await fetchBlock(gateway, cid, options)
    if (cid.code === RAW_CODE) return bytes
    if (cid.code !== dagPb.code) throw new IntegrityError(`${cid.toString()} is not part of a UnixFS file (codec 0x${cid.code.toString(16)})`)
    const { links, data } = decodeFileNode(bytes, cid.toString())
    if (links.length > 0) {
      if (stack.length >= MAX_DEPTH) throw new IntegrityError(`${root.toString()}: the file's DAG is deeper than ${MAX_DEPTH} levels`)
      stack.push({ links, at: 0 })
    }
    return data
  }
  const first = await visit(root)
  if (first !== undefined && first.byteLength > 0) yield first
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as { links: CID[], at: number }
    if (top.at >= top.links.length) { stack.pop(); continue }
    // A node's own data comes before its children's, so it is yielded as soon as it is read.
    const data = await visit(top.links[top.at++] as CID)
    if (data !== undefined && data.byteLength > 0) yield data
  }
}
