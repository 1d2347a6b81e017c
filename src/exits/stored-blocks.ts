import type { CID } from 'multiformats/cid'
import { checkBlock, decodeFileNode } from '../content/index.js'
import { ContentNotFoundError, IntegrityError } from '../errors.js'
import type { ReadStoredBlock } from '../remote/index.js'

export type { ReadStoredBlock }

/** Takes each block of an object, checked against its CID; awaited, so a slow writer holds the walk back. */
export type StoredBlockSink = (cid: CID, bytes: Uint8Array) => Promise<void>

const RAW = 0x55
const DAG_PB = 0x70
/**
 * Blocks read ahead of the one being checked and written (DFS order): the store's reads run on
 * libuv's threads while this one hashes. Four: a CarFile holds two writes and a sync on the same
 * four threads, and the reads of one object are adjacent in its pack, so the kernel's own
 * read-ahead keeps them sequential. Memory: four blocks (1 MiB at the profiles' chunk size).
 */
const READ_AHEAD = 4
/** Only a damaged store could make a file's DAG this deep, or one that loops. */
const MAX_DEPTH = 64

interface Pending { readonly cid: CID, readonly depth: number, reading?: Promise<Uint8Array | undefined> }

/**
 * An object's blocks read from the store it lives in, root first (DFS, links in order: the order
 * of a gateway's CAR), each hashed and compared with its CID before `sink` is handed it, so a
 * block the disk damaged fails the walk ({@link IntegrityError}, the block named) and never
 * reaches the sink. A block seen twice in one object is handed over once. A block the store lacks
 * is {@link ContentNotFoundError}. `maxBytes` bounds the object's file bytes (its leaves' data).
 * Memory: {@link READ_AHEAD} blocks, and the links of the nodes on the way down.
 */
export async function walkStoredBlocks (read: ReadStoredBlock, root: CID, sink: StoredBlockSink, options: { readonly maxBytes?: number, readonly signal?: AbortSignal } = {}): Promise<{ size: number, blocks: number }> {
  const queue: Pending[] = [{ cid: root, depth: 0 }]
  // Each block handed over once, with the file bytes below it: a repeat adds them to the size again.
  const seen = new Map<string, number>()
  let size = 0
  let blocks = 0
  const start = (entry: Pending): Promise<Uint8Array | undefined> => {
    if (entry.reading === undefined) {
      entry.reading = entry.cid.multihash.code === 0x00 ? Promise.resolve(entry.cid.multihash.digest) : read(entry.cid)
      // Awaited in turn below; one left unread when the walk fails must not be unhandled.
      entry.reading.catch(() => {})
    }
    return entry.reading
  }
  try {
    while (queue.length > 0) {
      options.signal?.throwIfAborted()
      for (let i = 0; i < Math.min(READ_AHEAD, queue.length); i++) void start(queue[i] as Pending)
      const entry = queue.shift() as Pending
      const text = entry.cid.toString()
      const bytes = await start(entry)
      const again = seen.get(text)
      if (again !== undefined) {
        size += again
        continue
      }
      if (bytes === undefined) throw new ContentNotFoundError(`the service does not hold block ${text}${entry.depth === 0 ? '' : ` of ${root.toString()}`}`)
      const check = checkBlock(entry.cid, bytes)
      if (check !== 'ok') {
        throw new IntegrityError(check === 'mismatch'
          ? `block ${text}${entry.depth === 0 ? '' : ` of ${root.toString()}`} as stored does not hash to its CID: the service's data is damaged`
          : `block ${text} is hashed with a function cidsync cannot check (multihash 0x${entry.cid.multihash.code.toString(16)}), so it is not exported on trust`)
      }
      let links: CID[] = []
      if (entry.cid.code === RAW) {
        size += bytes.byteLength
        seen.set(text, bytes.byteLength)
      } else if (entry.cid.code === DAG_PB) {
        const node = decodeFileNode(bytes, `block ${text} of ${root.toString()}`)
        size += node.data?.byteLength ?? 0
        seen.set(text, Number(node.fileSize))
        links = node.links
      } else throw new IntegrityError(`block ${text} is neither raw nor dag-pb (codec 0x${entry.cid.code.toString(16)}): not a stored file's block`)
      if (options.maxBytes !== undefined && size > options.maxBytes) throw new IntegrityError(`${root.toString()} as stored holds more than the ${options.maxBytes} bytes it may`)
      if (links.length > 0 && entry.depth >= MAX_DEPTH) throw new IntegrityError(`${root.toString()}: its DAG is deeper than ${MAX_DEPTH} levels`)
      await sink(entry.cid, bytes)
      blocks++
      queue.unshift(...links.map(cid => ({ cid, depth: entry.depth + 1 })))
    }
    return { size, blocks }
  } finally {
    // Reads started ahead of a failure finish on their own; nothing waits on them.
    queue.length = 0
  }
}
