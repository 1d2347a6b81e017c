import type { CID } from 'multiformats/cid'
import { checkBlock, decodeFileNode } from '../content/index.js'
import { ContentNotFoundError, IntegrityError } from '../errors.js'
import type { BlockSlots } from './block-slots.js'

/**
 * Reads a block of the service's own store in this process, without HTTP (the embedded service,
 * when it runs on the caller's thread): its bytes as stored, unchecked, or undefined when the
 * store does not hold it. Given `into`, a block that fits is read into its start and answered as
 * a view of it (the caller lends `into`, and takes it back once done with the view); else, and
 * without `into`, into memory of its own that the caller owns.
 */
export type ReadStoredBlock = (cid: CID, into?: Uint8Array) => Promise<Uint8Array | undefined>

/**
 * Reads several blocks of the service's own store at once, in order (a run of a file's leaves):
 * into `into` one after another as far as it holds them, blocks lying next to each other on the
 * disk with one read, each answered as a view (a block past `into`'s end in memory of its own);
 * undefined for a block the store does not hold. As stored, unchecked. The caller lends `into`
 * and takes it back once done with the views.
 */
export type ReadStoredRun = (cids: readonly CID[], into: Uint8Array) => Promise<Array<Uint8Array | undefined>>

export const RAW_CODE = 0x55
export const IDENTITY = 0x00
/** Only a damaged store could make a file's DAG this deep, or one that loops. */
export const MAX_DEPTH = 64
/**
 * A node's children read ahead of the one being copied: the store's reads run on libuv's threads
 * while this thread copies. The blocks of one object lie next to each other in its pack, so the
 * kernel's read-ahead keeps the reads sequential.
 */
const READ_AHEAD = 4

/**
 * A UnixFS file's bytes in order, from the store's blocks, as the service's gateway would send
 * `/ipfs/<root>`. Unchecked by default: the caller hashes the whole under the profile and compares
 * it with `root`, as it does a gateway's answer, so a block the disk damaged, or a node that
 * points elsewhere, makes bytes that are refused. `checked`: each block is hashed and compared
 * with its CID before anything of it comes out (the root with `root`, every other with the link
 * of the checked node above it), so every byte given out is verified as it comes and none needs
 * holding until the end; a block that does not match is an {@link IntegrityError}. A block the
 * store lacks is {@link ContentNotFoundError}; a node that is no UnixFS file, or a DAG deeper
 * than {@link MAX_DEPTH}, an {@link IntegrityError}. Memory: {@link READ_AHEAD} blocks a level.
 * `'nodes'`: every node is checked so, the raw leaves are not; for a caller that checks each
 * byte itself (a sealed blob: `SealedRead` in object-store.ts). The nodes steer the walk, so a
 * damaged one still stops it at once; each leaf must be as long as its node says.
 *
 * `slots`: raw leaves are read into slots taken from it, each given back once the caller asks
 * for the next bytes. So each yielded view is lent only until then: the caller copies what it
 * keeps. Reading into memory used again costs far less than into new memory, whose every page
 * the kernel faults in (docs/benchmarks.md, "Restoring large files").
 */
export async function * storedFileBytes (read: ReadStoredBlock, root: CID, signal?: AbortSignal, checked: boolean | 'nodes' = false, slots?: BlockSlots): AsyncGenerator<Uint8Array> {
  // The slots' memory now holding a block: given back once the caller is past it.
  const inSlots = new Set<ArrayBufferLike>()
  /** Gives back the slot `bytes` was read into, if it was (a block read into memory of its own is the collector's). */
  const giveBack = (bytes: Uint8Array): void => {
    if (inSlots.delete(bytes.buffer)) slots?.give(bytes)
  }
  const get = async (cid: CID): Promise<Uint8Array> => {
    if (cid.multihash.code === IDENTITY) return cid.multihash.digest
    // Raw leaves only: a node's bytes are kept while its children are read.
    const slot = cid.code === RAW_CODE ? slots?.take() : undefined
    let bytes: Uint8Array | undefined
    try {
      bytes = await read(cid, slot)
    } finally {
      if (slot !== undefined && bytes !== undefined && bytes.buffer === slot.buffer) inSlots.add(slot.buffer)
      else if (slot !== undefined) {
        // Read into memory of its own (larger than the slot), or not at all: the slot goes back unused.
        if (bytes !== undefined) slots?.grow(bytes.byteLength)
        slots?.give(slot)
      }
    }
    if (bytes === undefined) throw new ContentNotFoundError(`the service does not hold block ${cid.toString()}${cid === root ? '' : ` of ${root.toString()}`}`)
    if ((checked === true || (checked === 'nodes' && cid.code !== RAW_CODE)) && checkBlock(cid, bytes) !== 'ok') {
      giveBack(bytes)
      throw new IntegrityError(`block ${cid.toString()}${cid === root ? '' : ` of ${root.toString()}`} in the service's store does not hash to its CID: the store is damaged`)
    }
    return bytes
  }
  async function * walk (cid: CID, bytes: Uint8Array, depth: number): AsyncGenerator<Uint8Array> {
    signal?.throwIfAborted()
    if (cid.code === RAW_CODE) {
      try {
        yield bytes
      } finally {
        giveBack(bytes)
      }
      return
    }
    if (depth > MAX_DEPTH) throw new IntegrityError(`${root.toString()}: the file's DAG is deeper than ${MAX_DEPTH} levels`)
    const { links, data, blockSizes } = decodeFileNode(bytes, `${cid.toString()} of ${root.toString()}`)
    // An unhashed leaf must at least be as long as its checked node says: a stored length gone
    // wrong would shift every byte after it, and fail every file there as forged.
    const sized = checked === 'nodes' && blockSizes.length === links.length
    if (data !== undefined && data.byteLength > 0) yield data
    const ahead: Array<Promise<Uint8Array>> = []
    let next = 0
    try {
      for (const [i, link] of links.entries()) {
        while (ahead.length < READ_AHEAD && next < links.length) {
          const reading = get(links[next++] as CID)
          // Awaited in turn below; one left unread when the walk stops must not be unhandled.
          reading.catch(() => {})
          ahead.push(reading)
        }
        const child = await (ahead.shift() as Promise<Uint8Array>)
        if (sized && link.code === RAW_CODE && child.byteLength !== Number(blockSizes[i])) {
          giveBack(child)
          throw new IntegrityError(`block ${link.toString()} of ${root.toString()} in the service's store holds ${child.byteLength} bytes where its node says ${blockSizes[i] ?? 0n}: the store is damaged`)
        }
        yield * walk(link, child, depth + 1)
      }
    } finally {
      // A walk stopped early: the reads ahead give their slots back as they end.
      for (const reading of ahead) void reading.then(giveBack, () => {})
    }
  }
  yield * walk(root, await get(root), 0)
}
