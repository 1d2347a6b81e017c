import type { CID } from 'multiformats/cid'
import { checkBlock, decodeFileNode } from '../content/index.js'
import { ContentNotFoundError, IntegrityError } from '../errors.js'
import type { ReadStoredBlock } from '../remote/index.js'
import type { BlockHasher } from './block-hasher.js'
import type { BlockSlots } from './block-slots.js'

export type { ReadStoredBlock }

/**
 * Takes each block of an object, checked against its CID; awaited, so a slow writer holds the walk
 * back. The bytes are lent until its promise settles (they may be read over afterwards): copy what must be kept.
 */
export type StoredBlockSink = (cid: CID, bytes: Uint8Array) => Promise<void>

const RAW = 0x55
const DAG_PB = 0x70
const SHA2_256 = 0x12
/**
 * Blocks read (and, given a hasher, hashed) ahead of the one being written (DFS order): the
 * store's reads run on libuv's threads and the hashing on its own while this one copies. The
 * reads of one object are adjacent in its pack, so the kernel's own read-ahead keeps them
 * sequential. Memory: this many blocks (2 MiB at the profiles' chunk size).
 */
const READ_AHEAD = 8
/** Only a damaged store could make a file's DAG this deep, or one that loops. */
const MAX_DEPTH = 64

/** A block read and checked; `lent`: it lies in a slot of the walk's, given back once written. */
interface Checked { readonly bytes: Uint8Array, readonly check: 'ok' | 'mismatch' | 'unsupported', readonly lent: boolean }
interface Pending { readonly cid: CID, readonly depth: number, reading?: Promise<Checked | undefined> }

/** What a walk reads with: a thread to hash blocks on, and slots to read them into. */
export interface WalkTools { readonly hasher?: BlockHasher, readonly slots?: BlockSlots }

/** A block read (into a slot, given `slots`) and checked against its CID: on `hasher`'s thread for SHA-256, else here. */
async function readChecked (read: ReadStoredBlock, cid: CID, { hasher, slots }: WalkTools): Promise<Checked | undefined> {
  if (cid.multihash.code === 0x00) return { bytes: cid.multihash.digest, check: checkBlock(cid, cid.multihash.digest), lent: false }
  // Raw leaves only: a node's bytes are kept while its links (CIDs viewing them) wait in the queue.
  const slot = cid.code === RAW ? slots?.take() : undefined
  const bytes = await read(cid, slot)
  // Read into the slot, or not (too small, or a store that takes none): only a slot's memory is
  // the walk's to hand to another thread and to read over again.
  const lent = slot !== undefined && bytes !== undefined && bytes.buffer === slot.buffer
  if (slot !== undefined && !lent) {
    if (bytes !== undefined) slots?.grow(bytes.byteLength)
    slots?.give(slot)
  }
  if (bytes === undefined) return undefined
  if (hasher === undefined || cid.multihash.code !== SHA2_256) return { bytes, check: checkBlock(cid, bytes), lent }
  const hashed = await hasher.sha256(bytes, lent)
  return { bytes: hashed.bytes, check: Buffer.from(hashed.digest.buffer, hashed.digest.byteOffset, hashed.digest.byteLength).equals(cid.multihash.digest) ? 'ok' : 'mismatch', lent }
}

/**
 * An object's blocks read from the store it lives in, root first (DFS, links in order: the order
 * of a gateway's CAR), each hashed and compared with its CID before `sink` is handed it, so a
 * block the disk damaged fails the walk ({@link IntegrityError}, the block named) and never
 * reaches the sink. A block seen twice in one object is handed over once. A block the store lacks
 * is {@link ContentNotFoundError}. `maxBytes` bounds the object's file bytes (its leaves' data).
 * Given `hasher`, blocks are hashed on its thread as they are read ahead, still each checked
 * before the sink sees it; given `slots`, raw leaves are read into them and each slot given back
 * once the sink is done with it (a node never is: its links' CIDs view its bytes). Memory: {@link READ_AHEAD} blocks, and the links of the nodes on the way down.
 */
export async function walkStoredBlocks (read: ReadStoredBlock, root: CID, sink: StoredBlockSink, options: WalkTools & { readonly maxBytes?: number, readonly signal?: AbortSignal } = {}): Promise<{ size: number, blocks: number }> {
  const queue: Pending[] = [{ cid: root, depth: 0 }]
  // Each block handed over once, with the file bytes below it: a repeat adds them to the size again.
  const seen = new Map<string, number>()
  let size = 0
  let blocks = 0
  const start = (entry: Pending): Promise<Checked | undefined> => {
    if (entry.reading === undefined) {
      entry.reading = readChecked(read, entry.cid, options)
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
      const checked = await start(entry)
      const again = seen.get(text)
      if (again !== undefined) {
        size += again
        if (checked?.lent === true) options.slots?.give(checked.bytes)
        continue
      }
      if (checked === undefined) throw new ContentNotFoundError(`the service does not hold block ${text}${entry.depth === 0 ? '' : ` of ${root.toString()}`}`)
      const { bytes, check } = checked
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
      // Read over by a later leaf: the sink is done with it.
      if (checked.lent) options.slots?.give(bytes)
      blocks++
      queue.unshift(...links.map(cid => ({ cid, depth: entry.depth + 1 })))
    }
    return { size, blocks }
  } finally {
    // Reads started ahead of a failure finish on their own; nothing waits on them.
    queue.length = 0
  }
}
