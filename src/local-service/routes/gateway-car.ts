import * as CarBufferWriter from '@ipld/car/buffer-writer'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import { varint } from 'multiformats'
import { HttpFailure } from '../http.js'
import type { DagScope, EntityBytes } from './gateway-format.js'

export const RAW_CODE = 0x55
const IDENTITY = 0x00

/** Reads a stored block (identity CIDs from their own digest). */
export type ReadBlock = (cid: CID) => Promise<Uint8Array>

/**
 * What one CAR response may make the server do, whatever the DAG: blocks and bytes sent (a DAG of
 * shared subtrees with `dups=y` grows exponentially: a few KiB stored, 2^40 blocks asked; a
 * million 1 MiB blocks is a TiB), links held waiting on the walk's stack, and its depth. Past
 * one, the stream is cut (the client sees an incomplete CAR). `maxBytes` is `[local_service]
 * max_car_bytes` for `cidsync local-service` (64 GiB: the largest file cidsync stores by default).
 */
export const CAR_LIMITS = { maxBlocks: 1 << 20, maxBytes: 64 * 2 ** 30, maxPendingLinks: 100_000, maxDepth: 1024 } as const

export type CarLimits = { readonly [K in keyof typeof CAR_LIMITS]: number }

/** A walk stopped mid-stream: a child block is missing, a bound was reached, the DAG is malformed. */
export class CarWalkError extends Error {}

/** How the links of a node are followed: every one, a UnixFS file's, a HAMT's shards only, none. */
type Mode = 'all' | 'file' | 'hamt' | 'none'

interface Pending { readonly cid: CID, readonly mode: Mode, readonly start: number }
interface Frame { readonly key: string, readonly next: Pending[], at: number }

export interface CarPlan {
  readonly scope: DagScope
  readonly dups: boolean
  /** How the root's links are followed, settled before anything is sent. */
  readonly mode: Mode
  /** Inclusive byte range of the root file whose blocks are wanted (entity-bytes), if any. */
  readonly range?: { readonly from: number, readonly to: number }
}

function unixfsOf (node: dagPb.PBNode): UnixFS | undefined {
  if (node.Data === undefined) return undefined
  try {
    return UnixFS.unmarshal(node.Data)
  } catch {
    return undefined
  }
}

/** A UnixFS file's size, or undefined when the root is not a file. */
export function fileSize (cid: CID, root: Uint8Array): number | undefined {
  if (cid.code === RAW_CODE) return root.byteLength
  if (cid.code !== dagPb.code) return undefined
  const unixfs = unixfsOf(dagPb.decode(root))
  return unixfs !== undefined && (unixfs.type === 'file' || unixfs.type === 'raw') ? Number(unixfs.fileSize()) : undefined
}

/** How the root's links are followed under a scope (entity: a file whole, a directory's listing). */
function rootMode (cid: CID, root: Uint8Array, scope: DagScope): Mode {
  if (scope === 'block' || cid.code === RAW_CODE) return 'none'
  if (cid.code !== dagPb.code) {
    if (scope === 'entity') return 'none' // not UnixFS: the entity is the block
    throw new HttpFailure(400, `${cid.toString()} has codec 0x${cid.code.toString(16)}, whose links this gateway does not follow: ask dag-scope=block`)
  }
  if (scope === 'all') return 'all'
  const type = unixfsOf(dagPb.decode(root))?.type
  return type === 'file' || type === 'raw' ? 'file' : type === 'hamt-sharded-directory' ? 'hamt' : 'none'
}

/**
 * The plan for a CAR of `root`, or a 400 for a byte range wholly outside the file (known from the
 * root block, before anything is sent). A range that is empty once resolved is the root alone.
 */
export function carPlan (cid: CID, root: Uint8Array, scope: DagScope, dups: boolean, bytes: EntityBytes | undefined): CarPlan {
  const plan = (scope: DagScope, range?: CarPlan['range']): CarPlan => ({ scope, dups, mode: rootMode(cid, root, scope), range })
  if (bytes === undefined) return plan(scope)
  const size = fileSize(cid, root)
  if (size === undefined) return plan('entity') // not a file: the spec says ignore it
  if (size === 0) return plan('block')
  const from = bytes.from < 0 ? Math.max(0, size + bytes.from) : bytes.from
  const to = bytes.to === '*' ? size - 1 : bytes.to < 0 ? size + bytes.to : Math.min(bytes.to, size - 1)
  if (from > size - 1 || to < 0) throw new HttpFailure(400, `entity-bytes=${bytes.text} is outside the file's ${size} bytes`)
  if (to < from) return plan('block')
  return plan('entity', { from, to })
}

/** The links of a node to follow under its mode (and the byte range), each with its mode. */
function children (cid: CID, bytes: Uint8Array, mode: Mode, start: number, range: CarPlan['range']): Pending[] {
  if (mode === 'none' || cid.code === RAW_CODE) return []
  if (cid.code !== dagPb.code) throw new CarWalkError(`${cid.toString()} has codec 0x${cid.code.toString(16)}, whose links this gateway does not follow`)
  let node: dagPb.PBNode
  try {
    node = dagPb.decode(bytes)
  } catch (err) {
    throw new CarWalkError(`${cid.toString()} is not valid dag-pb: ${(err as Error).message}`)
  }
  // Copied out: a link would otherwise keep its whole parent block alive while it waits.
  const copy = (link: dagPb.PBLink): CID => CID.decode(link.Hash.bytes.slice())
  if (mode === 'all') return node.Links.map(link => ({ cid: copy(link), mode, start: 0 }))
  if (mode === 'hamt') {
    const fanout = Number(unixfsOf(node)?.fanout ?? 256n)
    const pad = Math.max(1, (fanout - 1).toString(16).length)
    // A name of just the prefix is a sub-shard; a longer one is an entry, outside the listing.
    return node.Links.filter(link => (link.Name ?? '').length === pad).map(link => ({ cid: copy(link), mode, start: 0 }))
  }
  const unixfs = unixfsOf(node)
  const sizes = unixfs?.blockSizes ?? []
  if (range === undefined || sizes.length !== node.Links.length) return node.Links.map(link => ({ cid: copy(link), mode, start: 0 }))
  const out: Pending[] = []
  let at = start + (unixfs?.data?.byteLength ?? 0)
  for (const [i, link] of node.Links.entries()) {
    const size = Number(sizes[i])
    if (at <= range.to && at + size - 1 >= range.from) out.push({ cid: copy(link), mode, start: at })
    at += size
  }
  return out
}

/**
 * The DAG's blocks in depth-first order (pre-order, links in order), one read at a time as the
 * consumer pulls: memory holds the links waiting on the walk's stack, bounded by `limits`, and
 * with `dups` off the CIDs already sent (at most `limits.maxBlocks`, and those of `sentBefore`). A
 * block met again on its own path (only a damaged store can make a cycle) stops the walk.
 */
export async function * dagBlocks (read: ReadBlock, root: CID, rootBytes: Uint8Array, plan: CarPlan, limits: CarLimits = CAR_LIMITS, sentBefore: readonly CID[] = []): AsyncGenerator<{ cid: CID, bytes: Uint8Array }> {
  const keyOf = (cid: CID): string => Buffer.from(cid.bytes).toString('latin1')
  // The blocks of a path sent ahead of the walk (`sentBefore`) are not sent again with dups=n.
  const seen = new Set<string>(sentBefore.map(keyOf))
  const onPath = new Set<string>()
  const stack: Frame[] = []
  let pendingLinks = 0
  let sent = 0
  let sentBytes = 0

  async function * visit (item: Pending, known?: Uint8Array): AsyncGenerator<{ cid: CID, bytes: Uint8Array }> {
    const key = keyOf(item.cid)
    if (onPath.has(key)) throw new CarWalkError(`${item.cid.toString()} links to itself through its own children: the service's data dir is damaged`)
    if (!plan.dups && seen.has(key)) return
    const bytes = known ?? await read(item.cid)
    if (item.cid.multihash.code !== IDENTITY) {
      if (++sent > limits.maxBlocks) throw new CarWalkError(`the CAR would hold more than ${limits.maxBlocks} blocks`)
      // Counted as carBytes writes it: the section's length prefix, the CID, the block.
      sentBytes += 10 + item.cid.bytes.byteLength + bytes.byteLength
      if (sentBytes > limits.maxBytes) throw new CarWalkError(`the CAR would be larger than ${limits.maxBytes} bytes`)
      if (!plan.dups) seen.add(key)
      yield { cid: item.cid, bytes }
    }
    const next = children(item.cid, bytes, item.mode, item.start, plan.range)
    if (next.length === 0) return
    if (stack.length >= limits.maxDepth) throw new CarWalkError(`the DAG is deeper than ${limits.maxDepth} levels`)
    pendingLinks += next.length
    if (pendingLinks > limits.maxPendingLinks) throw new CarWalkError(`the walk would hold more than ${limits.maxPendingLinks} links at once`)
    stack.push({ key, next, at: 0 })
    onPath.add(key)
  }

  yield * visit({ cid: root, mode: plan.mode, start: 0 }, rootBytes)
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as Frame
    if (top.at >= top.next.length) {
      stack.pop()
      onPath.delete(top.key)
      continue
    }
    const item = top.next[top.at] as Pending
    // Released as soon as taken: a frame holds only the links still to walk.
    top.next[top.at++] = undefined as unknown as Pending
    pendingLinks--
    yield * visit(item)
  }
}

/** A CARv1 stream: the header rooted at `root`, then each block as a length-prefixed section. */
export async function * carBytes (root: CID, blocks: AsyncIterable<{ cid: CID, bytes: Uint8Array }>): AsyncGenerator<Uint8Array> {
  const header = CarBufferWriter.createWriter(new ArrayBuffer(CarBufferWriter.headerLength({ roots: [root] })), { roots: [root] })
  yield header.close()
  for await (const { cid, bytes } of blocks) {
    const length = cid.bytes.byteLength + bytes.byteLength
    const prefix = new Uint8Array(varint.encodingLength(length))
    varint.encodeTo(length, prefix)
    yield Buffer.concat([prefix, cid.bytes])
    yield bytes
  }
}
