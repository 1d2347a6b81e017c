import { UnixFS } from 'ipfs-unixfs'
import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import { CarWalkError, RAW_CODE, type CarLimits, type ReadBlock } from './gateway-car.js'
import type { ByteRange } from './gateway-range.js'

/**
 * A node's children read ahead of the one being sent: the disk reads while the socket drains. Two:
 * the reads share libuv's four threads with whatever else the process writes (an export's CAR).
 */
const READ_AHEAD = 2

/** What one file answer has spent of its bounds, and where in the file its walk is. */
interface Walk {
  blocks: number
  bytes: number
  /** The file offset of the next byte the walk meets. */
  at: number
  /** Bytes sent so far. */
  sent: number
  readonly range: ByteRange
}

/**
 * A file's bytes in order (those of `range`, the whole by default), the blocks read as the response
 * drains, each node's next few children ahead: memory stays at a few blocks a level however large
 * the file. (ipfs-unixfs-exporter reads ahead without bound.) A range skips the subtrees outside it
 * by the nodes' `blocksizes`, so its blocks are the few that hold it. Bounded as a CAR is: at most
 * `limits.maxBlocks` blocks and `maxDepth` levels (only a damaged store could make a DAG that deep,
 * or one that loops), and no more bytes than `size`, the length the root announced and the head
 * promised (a hostile DAG linking the same child again and again claims a small file and holds
 * terabytes). Past one, or short of what was promised, a {@link CarWalkError}: the response is
 * cut, and the client sees fewer bytes than its `Content-Length`.
 */
export async function * fileBytes (read: ReadBlock, limits: CarLimits, cid: CID, root: Uint8Array, size: number, range: ByteRange = { from: 0, to: size - 1 }): AsyncGenerator<Uint8Array> {
  const state: Walk = { blocks: 0, bytes: 0, at: 0, sent: 0, range }
  yield * walk(read, limits, state, size, cid, root, 0)
  const wanted = Math.max(0, range.to - range.from + 1)
  if (state.sent < wanted) throw new CarWalkError(`${cid.toString()}: the file's blocks hold ${state.sent} of the ${wanted} bytes asked for`)
}

function decoded (cid: CID, bytes: Uint8Array): { node: dagPb.PBNode | undefined, unixfs: UnixFS | undefined } {
  if (cid.code === RAW_CODE) return { node: undefined, unixfs: undefined }
  try {
    const node = dagPb.decode(bytes)
    return { node, unixfs: node.Data === undefined ? undefined : UnixFS.unmarshal(node.Data) }
  } catch (err) {
    throw new CarWalkError(`${cid.toString()} is not a valid UnixFS node: ${(err as Error).message.slice(0, 120)}`)
  }
}

/** The links to walk, each with the file offset it starts at when the node's `blocksizes` say. */
function wanted (node: dagPb.PBNode, unixfs: UnixFS | undefined, state: Walk): Array<{ cid: CID, at?: number }> {
  const sizes = unixfs?.blockSizes ?? []
  if (sizes.length !== node.Links.length) return node.Links.map(link => ({ cid: link.Hash }))
  const out: Array<{ cid: CID, at?: number }> = []
  let at = state.at
  for (const [i, link] of node.Links.entries()) {
    const size = Number(sizes[i])
    if (at + size > state.range.from && at <= state.range.to) out.push({ cid: link.Hash, at })
    at += size
  }
  return out
}

async function * walk (read: ReadBlock, limits: CarLimits, state: Walk, size: number, cid: CID, block: Uint8Array | undefined, depth: number): AsyncGenerator<Uint8Array> {
  if (depth > limits.maxDepth) throw new CarWalkError(`${cid.toString()}: the file's DAG is deeper than ${limits.maxDepth} levels`)
  if (++state.blocks > limits.maxBlocks) throw new CarWalkError(`${cid.toString()}: the file's DAG has more than ${limits.maxBlocks} blocks`)
  const bytes = block ?? await read(cid)
  const { node, unixfs } = decoded(cid, bytes)
  const data = node === undefined ? bytes : unixfs?.data
  if (data !== undefined && data.byteLength > 0) {
    state.bytes += data.byteLength
    if (state.bytes > size) throw new CarWalkError(`${cid.toString()}: the file's blocks hold more than the ${size} bytes its root announced`)
    const start = state.at
    state.at += data.byteLength
    const from = Math.max(state.range.from, start)
    const to = Math.min(state.range.to + 1, state.at)
    if (from < to) {
      state.sent += to - from
      yield from === start && to === state.at ? data : data.subarray(from - start, to - start)
    }
  }
  if (node === undefined) return
  const links = wanted(node, unixfs, state)
  const ahead: Array<Promise<Uint8Array>> = []
  let next = 0
  for (const link of links) {
    while (ahead.length < READ_AHEAD && next < links.length) {
      const reading = read((links[next++] as { cid: CID }).cid)
      // Awaited in turn below; one left unread when the client goes away must not be unhandled.
      reading.catch(() => {})
      ahead.push(reading)
    }
    if (link.at !== undefined) state.at = link.at
    // Past the range: the rest of the file is not wanted.
    if (state.at > state.range.to) return
    yield * walk(read, limits, state, size, link.cid, await ahead.shift(), depth + 1)
  }
}
