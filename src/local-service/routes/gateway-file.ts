import { UnixFS } from 'ipfs-unixfs'
import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import { CarWalkError, RAW_CODE, type CarLimits, type ReadBlock } from './gateway-car.js'

/**
 * A node's children read ahead of the one being sent: the disk reads while the socket drains. Two:
 * the reads share libuv's four threads with whatever else the process writes (an export's CAR).
 */
const READ_AHEAD = 2

/** What one file answer has spent of its bounds. */
interface Budget { blocks: number, bytes: number }

/**
 * A file's bytes in order, the blocks read as the response drains, each node's next few children
 * ahead: memory stays at a few blocks a level however large the file. (ipfs-unixfs-exporter reads
 * ahead without bound.) Bounded as a CAR is: at most `limits.maxBlocks` blocks and `maxDepth`
 * levels (only a damaged store could make a DAG that deep, or one that loops), and no more bytes
 * than `size`, the length the root announced and the head promised (a hostile DAG linking the same
 * child again and again claims a small file and holds terabytes). Past one, a {@link CarWalkError}:
 * the response is cut, and the client sees fewer bytes than its `Content-Length`.
 */
export async function * fileBytes (read: ReadBlock, limits: CarLimits, cid: CID, root: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  yield * walk(read, limits, { blocks: 0, bytes: 0 }, size, cid, root, 0)
}

async function * walk (read: ReadBlock, limits: CarLimits, spent: Budget, size: number, cid: CID, block: Uint8Array | undefined, depth: number): AsyncGenerator<Uint8Array> {
  if (depth > limits.maxDepth) throw new CarWalkError(`${cid.toString()}: the file's DAG is deeper than ${limits.maxDepth} levels`)
  if (++spent.blocks > limits.maxBlocks) throw new CarWalkError(`${cid.toString()}: the file's DAG has more than ${limits.maxBlocks} blocks`)
  const bytes = block ?? await read(cid)
  const node = cid.code === RAW_CODE ? undefined : dagPb.decode(bytes)
  const data = node === undefined ? bytes : node.Data === undefined ? undefined : UnixFS.unmarshal(node.Data).data
  if (data !== undefined && data.byteLength > 0) {
    spent.bytes += data.byteLength
    if (spent.bytes > size) throw new CarWalkError(`${cid.toString()}: the file's blocks hold more than the ${size} bytes its root announced`)
    yield data
  }
  if (node === undefined) return
  const links = node.Links
  const ahead: Array<Promise<Uint8Array>> = []
  let next = 0
  for (const link of links) {
    while (ahead.length < READ_AHEAD && next < links.length) {
      const reading = read((links[next++] as dagPb.PBLink).Hash)
      // Awaited in turn below; one left unread when the client goes away must not be unhandled.
      reading.catch(() => {})
      ahead.push(reading)
    }
    yield * walk(read, limits, spent, size, link.Hash, await ahead.shift(), depth + 1)
  }
}
