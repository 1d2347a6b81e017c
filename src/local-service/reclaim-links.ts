import * as dagCbor from '@ipld/dag-cbor'
import * as dagJson from '@ipld/dag-json'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import { ServiceDataDamagedError } from '../errors.js'

const RAW = 0x55
const DAG_PB = 0x70
const DAG_CBOR = 0x71
const DAG_JSON = 0x0129
/** Codecs that cannot link: raw bytes, plain JSON and CBOR (no link type), a libp2p key. */
const NO_LINKS = new Set([RAW, 0x0200, 0x51, 0x72])
/** The identity multihash: the block's bytes are in its CID, and never stored. */
export const IDENTITY = 0x00
/** Values a decoded dag-cbor or dag-json block may nest, looked through for links. */
const MAX_VALUES = 1_000_000

/** How a reclaim treats a block of this codec: its links read, none, or unknown (it holds only itself). */
export function linkKind (cid: CID): 'links' | 'none' | 'opaque' {
  if (NO_LINKS.has(cid.code)) return 'none'
  if (cid.code === DAG_PB || cid.code === DAG_CBOR || cid.code === DAG_JSON) return 'links'
  return 'opaque'
}

/**
 * The CIDs a block links to, or undefined when they cannot be read (a dag-cbor or dag-json block
 * that does not decode: imports check such blocks' hashes only). A dag-pb block that does not
 * decode is damage: every dag-pb block the service takes is decoded as it arrives.
 */
export function linksOf (cid: CID, bytes: Uint8Array): CID[] | undefined {
  if (cid.code === DAG_PB) {
    try {
      return dagPb.decode(bytes).Links.map(link => link.Hash)
    } catch (err) {
      throw new ServiceDataDamagedError(`block ${cid.toString()} is not valid dag-pb, so the blocks it links to are unknown: nothing was reclaimed; the service's data dir is damaged; restore it from a backup`, { cause: err })
    }
  }
  if (cid.code !== DAG_CBOR && cid.code !== DAG_JSON) return []
  let value: unknown
  try {
    value = cid.code === DAG_CBOR ? dagCbor.decode(bytes) : dagJson.decode(bytes)
  } catch {
    return undefined
  }
  return linksIn(value)
}

/** Every CID a decoded value holds, looked through without recursion (a deep value cannot overflow the stack). */
function linksIn (value: unknown): CID[] | undefined {
  const links: CID[] = []
  const stack: unknown[] = [value]
  for (let seen = 0; stack.length > 0; seen++) {
    if (seen > MAX_VALUES) return undefined
    const next = stack.pop()
    if (next === null || typeof next !== 'object') continue
    const cid = CID.asCID(next)
    if (cid !== null) { links.push(cid); continue }
    if (next instanceof Uint8Array) continue
    // A loop, not a spread: a spread of a large array overflows the stack.
    for (const inner of Array.isArray(next) ? next as unknown[] : Object.values(next)) stack.push(inner)
  }
  return links
}
