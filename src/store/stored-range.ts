import type { CID } from 'multiformats/cid'
import { checkBlock, decodeFileNode } from '../content/index.js'
import { ContentNotFoundError, IntegrityError } from '../errors.js'
import { IDENTITY, MAX_DEPTH, RAW_CODE, type ReadStoredBlock } from './stored-file.js'

/** Bytes `offset` to `offset + length` of an object. */
export interface ByteRange { readonly offset: number, readonly length: number }

/**
 * Bytes `range` of a UnixFS file, from the store's blocks: only the blocks that hold them are
 * read, each hashed and compared with its CID before anything of it comes out (the root with
 * `root`, every other with the link of the checked node above it). A node's children before the
 * range are passed over by the sizes the node records; each leaf read must be as long as its
 * node says, or the walk is an {@link IntegrityError}. So every byte given out is verified, and
 * a file of a large pack costs its own blocks, not the pack's. A block the store lacks is
 * {@link ContentNotFoundError}. A range past the file's end gives what the file holds.
 * `leaves: false`: the raw leaves are not hashed, for a caller that checks each byte itself (a
 * sealed blob); every node still is, and each leaf's length.
 */
export async function * storedFileRange (read: ReadStoredBlock, root: CID, range: ByteRange, signal?: AbortSignal, leaves = true): AsyncGenerator<Uint8Array> {
  const end = range.offset + range.length
  const rootText = root.toString()
  const label = (cid: CID): string => { const text = cid.toString(); return text === rootText ? text : `${text} of ${rootText}` }
  const get = async (cid: CID): Promise<Uint8Array> => {
    if (cid.multihash.code === IDENTITY) return cid.multihash.digest
    const bytes = await read(cid)
    if (bytes === undefined) throw new ContentNotFoundError(`the service does not hold block ${label(cid)}`)
    if ((leaves || cid.code !== RAW_CODE) && checkBlock(cid, bytes) !== 'ok') throw new IntegrityError(`block ${label(cid)} in the service's store does not hash to its CID: the store is damaged`)
    return bytes
  }
  /** The part of `bytes`, which start at `at` in the file, inside the range. */
  const within = (bytes: Uint8Array, at: number): Uint8Array | undefined => {
    const from = Math.max(range.offset, at)
    const to = Math.min(end, at + bytes.byteLength)
    return to > from ? bytes.subarray(from - at, to - at) : undefined
  }
  /** Yields what of the block `cid` (holding `size` bytes of the file, from `at`) lies in the range. */
  async function * walk (cid: CID, at: number, size: number | undefined, depth: number): AsyncGenerator<Uint8Array> {
    signal?.throwIfAborted()
    const bytes = await get(cid)
    if (cid.code === RAW_CODE) {
      if (size !== undefined && bytes.byteLength !== size) throw new IntegrityError(`block ${label(cid)} holds ${bytes.byteLength} bytes where its node says ${size}: the file's DAG is damaged`)
      const part = within(bytes, at)
      if (part !== undefined) yield part
      return
    }
    if (depth > MAX_DEPTH) throw new IntegrityError(`${root.toString()}: the file's DAG is deeper than ${MAX_DEPTH} levels`)
    const node = decodeFileNode(bytes, label(cid))
    if (node.blockSizes.length !== node.links.length) throw new IntegrityError(`${label(cid)} records ${node.blockSizes.length} sizes for ${node.links.length} children: its bytes cannot be found by range`)
    const own = node.data?.byteLength ?? 0
    if (size !== undefined && Number(node.fileSize) !== size) throw new IntegrityError(`${label(cid)} holds ${node.fileSize} bytes where its parent says ${size}: the file's DAG is damaged`)
    if (own > 0) {
      const part = within(node.data as Uint8Array, at)
      if (part !== undefined) yield part
    }
    let child = at + own
    for (const [i, link] of node.links.entries()) {
      if (child >= end) return
      const bytesUnder = Number(node.blockSizes[i])
      if (child + bytesUnder > range.offset) yield * walk(link, child, bytesUnder, depth + 1)
      child += bytesUnder
    }
  }
  if (range.length > 0) yield * walk(root, 0, undefined, 0)
}
