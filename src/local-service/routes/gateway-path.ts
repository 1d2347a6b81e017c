import * as dagPb from '@ipld/dag-pb'
import { murmur364 } from '@multiformats/murmur3'
import { UnixFS } from 'ipfs-unixfs'
import type { CID } from 'multiformats/cid'
import { HttpFailure } from '../http.js'
import { RAW_CODE, type ReadBlock } from './gateway-car.js'

/** At most this many segments after the CID: each costs a few reads, and real trees are shallower. */
export const MAX_PATH_SEGMENTS = 128

/** The path after `/ipfs/<cid>`: its decoded segments, and whether it ends in `/`. */
export interface ContentPath { readonly segments: readonly string[], readonly trailingSlash: boolean }

/** `rest` as sent (percent-encoded, `''` or starting with `/`); empty segments are dropped. */
export function parseContentPath (rest: string): ContentPath {
  const parts = rest.split('/').slice(1).filter(part => part !== '')
  if (parts.length > MAX_PATH_SEGMENTS) throw new HttpFailure(400, `the path has ${parts.length} segments: this gateway follows at most ${MAX_PATH_SEGMENTS}`)
  const segments = parts.map(part => {
    try {
      return decodeURIComponent(part)
    } catch {
      throw new HttpFailure(400, `the path segment ${part.slice(0, 80)} is not valid percent-encoding`)
    }
  })
  return { segments, trailingSlash: rest.endsWith('/') }
}

/** Where a path led: the block at its end, each segment's CID, and every block read on the way. */
export interface Resolved {
  readonly cid: CID
  readonly block: Uint8Array
  /** One a segment, the root first: `X-Ipfs-Roots`. */
  readonly roots: readonly CID[]
  /** The blocks that prove the path, in the order read (HAMT shards too), the end's not among them. */
  readonly trail: readonly CID[]
}

/** A UnixFS directory's node, or undefined when the block is something else. */
export function directoryOf (cid: CID, block: Uint8Array): { node: dagPb.PBNode, unixfs: UnixFS } | undefined {
  if (cid.code !== dagPb.code) return undefined
  try {
    const node = dagPb.decode(block)
    const unixfs = node.Data === undefined ? undefined : UnixFS.unmarshal(node.Data)
    return unixfs !== undefined && (unixfs.type === 'directory' || unixfs.type === 'hamt-sharded-directory') ? { node, unixfs } : undefined
  } catch {
    return undefined
  }
}

/** A block the path needs, or a 404 naming where it was missing: this gateway holds all it ever will. */
export async function readOn (read: ReadBlock, cid: CID, where: string): Promise<Uint8Array> {
  try {
    return await read(cid)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new HttpFailure(404, `${where}: block ${cid.toString()} is not stored here`)
    throw err
  }
}

/** A HAMT's fan-out as bits a level, or a 502: only a power of two can shard. */
function hamtBits (cid: CID, unixfs: UnixFS): number {
  const fanout = Number(unixfs.fanout ?? 0n)
  const bits = Math.log2(fanout)
  if (!Number.isInteger(bits) || bits < 1 || bits > 16) throw new HttpFailure(502, `${cid.toString()} is a HAMT directory with a fan-out of ${fanout}, which cannot be`)
  return bits
}

/** `bits` bits of the hash from bit `at`, most significant first, as go-unixfs and js-unixfs take them. */
function bitsOf (hash: Uint8Array, at: number, bits: number): number {
  let out = 0
  for (let i = at; i < at + bits; i++) out = (out << 1) | (((hash[i >> 3] as number) >> (7 - (i & 7))) & 1)
  return out
}

/**
 * The CID `name` links to in the directory `cid`, or undefined. A HAMT is followed by the name's
 * murmur3 hash (64 bits: at most 64 / bits levels), each shard read pushed onto `trail`.
 */
export async function childNamed (read: ReadBlock, cid: CID, dir: { node: dagPb.PBNode, unixfs: UnixFS }, name: string, trail: CID[], where: string): Promise<CID | undefined> {
  if (dir.unixfs.type === 'directory') return dir.node.Links.find(link => link.Name === name)?.Hash
  const hash = await murmur364.encode(new TextEncoder().encode(name))
  let shard = { cid, ...dir }
  for (let at = 0; ;) {
    const bits = hamtBits(shard.cid, shard.unixfs)
    if (at + bits > 64) return undefined
    const pad = ((1 << bits) - 1).toString(16).length
    const prefix = bitsOf(hash, at, bits).toString(16).toUpperCase().padStart(pad, '0')
    at += bits
    const link = shard.node.Links.find(l => (l.Name ?? '').startsWith(prefix))
    if (link === undefined) return undefined
    if (link.Name !== prefix) return link.Name === prefix + name ? link.Hash : undefined
    const block = await readOn(read, link.Hash, where)
    const next = directoryOf(link.Hash, block)
    if (next?.unixfs.type !== 'hamt-sharded-directory') throw new HttpFailure(502, `${where}: ${link.Hash.toString()} is not the HAMT shard its parent links it as`)
    trail.push(link.Hash)
    shard = { cid: link.Hash, ...next }
  }
}

/**
 * Follows `segments` from `root` through UnixFS directories (plain and HAMT). A name not there,
 * or a file with path left, is a 404 naming what is missing; a codec whose links this gateway
 * does not follow is a 501, as the path gateway spec says.
 */
export async function resolvePath (read: ReadBlock, root: CID, rootBlock: Uint8Array, segments: readonly string[], label: string): Promise<Resolved> {
  let cid = root
  let block = rootBlock
  const roots: CID[] = [root]
  const trail: CID[] = []
  let walked = label.split('/').slice(0, 3).join('/')
  for (const name of segments) {
    const dir = directoryOf(cid, block)
    if (dir === undefined) {
      if (cid.code !== dagPb.code && cid.code !== RAW_CODE) throw new HttpFailure(501, `${walked} has codec 0x${cid.code.toString(16)}: this gateway follows paths through UnixFS directories only`)
      throw new HttpFailure(404, `${walked} is not a directory: it has no ${name}`)
    }
    trail.push(cid)
    const child = await childNamed(read, cid, dir, name, trail, walked)
    if (child === undefined) throw new HttpFailure(404, `${walked} has no ${name}`)
    walked += `/${name}`
    block = await readOn(read, child, walked)
    cid = child
    roots.push(cid)
  }
  return { cid, block, roots, trail }
}
