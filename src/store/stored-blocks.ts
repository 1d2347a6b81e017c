import { createHash } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { checkBlock, decodeFileNode, type FileNode } from '../content/index.js'
import { ContentNotFoundError, IntegrityError } from '../errors.js'
import type { ReadStoredBlock, ReadStoredRun } from './stored-file.js'
import type { BlockHasher } from './block-hasher.js'
import { BlockSlots } from './block-slots.js'

export type { ReadStoredBlock, ReadStoredRun }

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
/**
 * Given a run reader, a node's raw leaves are read a run at a time into buffers of this size (one
 * read, one message to the hashing thread and back for all of them, where one each cost the
 * export half its time in wake-ups and calls: docs/benchmarks.md, Exits), at most
 * {@link RUNS_AT_ONCE} runs read or held at once (the one being written and those ahead of it).
 */
export const RUN_BYTES = 4 * 1024 * 1024
/** Runs read ahead and held at once: 16 MiB of buffers, however short the runs (a small file's few leaves are one). */
export const RUNS_AT_ONCE = 4
/** The window, in runs' worth of leaves, within which runs are started. */
const RUNS_AHEAD = 3
/** Only a damaged store could make a file's DAG this deep, or one that loops. */
const MAX_DEPTH = 64

/** A buffer a run of leaves was read into: given back once the last of them is written. */
interface Run { slot: Uint8Array, left: number }
/** A block read and checked; `lent`: it lies in a slot of the walk's, given back once written; `run`: in a run's buffer. */
interface Checked { readonly bytes: Uint8Array, readonly check: 'ok' | 'mismatch' | 'unsupported', readonly lent: boolean, readonly run?: Run }

/** What a walk reads with: a thread to hash blocks on, slots to read them into, and a reader of runs of blocks. */
export interface WalkTools { readonly hasher?: BlockHasher, readonly slots?: BlockSlots, readonly readRun?: ReadStoredRun }
/** The run buffers of one walk (slots of {@link RUN_BYTES}). */
type RunTools = WalkTools & { readonly runs?: BlockSlots }

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
  return { bytes: hashed.bytes, check: sameDigest(hashed.digest, cid) ? 'ok' : 'mismatch', lent }
}

function sameDigest (digest: Uint8Array, cid: CID): boolean {
  return Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).equals(cid.multihash.digest)
}

/**
 * Raw SHA-256 leaves read as one run into a buffer of `runs` and hashed together (on `hasher`'s
 * thread, the buffer transferred there and back); a leaf the buffer could not hold is read into
 * memory of its own and hashed here. Answers each leaf's block, in order.
 */
async function readRunChecked (readRun: ReadStoredRun, cids: readonly CID[], { hasher, runs }: RunTools): Promise<Array<Checked | undefined>> {
  const slot = runs?.take() ?? new Uint8Array(RUN_BYTES)
  const views = await readRun(cids, slot)
  const inSlot = views.filter((view): view is Uint8Array => view !== undefined && view.buffer === slot.buffer)
  const hashed = hasher !== undefined
    ? await hasher.sha256Run(inSlot, true)
    : { blocks: inSlot, digests: inSlot.map(view => createHash('sha256').update(view).digest()) }
  const run: Run = { slot: hashed.blocks[0] !== undefined ? new Uint8Array(hashed.blocks[0].buffer as ArrayBuffer) : slot, left: inSlot.length }
  if (run.left === 0) runs?.give(run.slot)
  let next = 0
  return views.map((view, i) => {
    const cid = cids[i] as CID
    if (view === undefined) return undefined
    if (view.buffer !== slot.buffer) return { bytes: view, check: checkBlock(cid, view), lent: false }
    const at = next++
    return { bytes: hashed.blocks[at] as Uint8Array, check: sameDigest(hashed.digests[at] as Uint8Array, cid) ? 'ok' : 'mismatch', lent: false, run }
  })
}

/** A run's leaf is done with (written, or a repeat): its buffer goes back once the run's last is. */
function release (checked: Checked | undefined, tools: RunTools): void {
  if (checked?.lent === true) tools.slots?.give(checked.bytes)
  if (checked?.run !== undefined && --checked.run.left === 0) tools.runs?.give(checked.run.slot)
}

/** An object to walk: its root, and the most file bytes (its leaves' data) it may hold. */
export interface StoredObject { readonly cid: CID, readonly maxBytes?: number }

export interface WalkObjectsInit<T extends StoredObject> extends WalkTools {
  readonly signal?: AbortSignal
  /** Told once an object's last block is handed over: its file bytes (repeats counted) and blocks. */
  readonly onObject?: (object: T, walked: { size: number, blocks: number }) => void
  /** What a failure while `object` is walked becomes (the error thrown instead of `err`). */
  readonly failure?: (object: T, err: unknown) => unknown
}

/** An object being walked: what it has handed over so far, and each block once with the file bytes below it. */
interface Walking<T> { readonly item: T, readonly seen: Map<string, number>, size: number, blocks: number }
/**
 * A block queued for the walk, of `object`; `hint`: its size as its parent says (for a run's
 * length, never trusted); `node`: a root decoded as soon as it was read.
 */
interface Entry<T> { readonly cid: CID, readonly depth: number, readonly hint?: number, readonly object: Walking<T>, reading?: Promise<Checked | undefined>, node?: FileNode }

/**
 * Objects' blocks read from the store they live in, object after object, each root first (DFS,
 * links in order: the order of a gateway's CAR), each hashed and compared with its CID before
 * `sink` is handed it, so a block the disk damaged fails the walk ({@link IntegrityError}, the
 * block named) and never reaches the sink. A block seen twice in one object is handed over once.
 * A block the store lacks is {@link ContentNotFoundError}. `maxBytes` bounds an object's file bytes.
 * Reads run ahead across objects: the next objects are taken from `objects` while the window has
 * room, and a root is decoded as soon as it is read and checked, so its leaves are read while the
 * object before it is still being written (waiting for each object's root and first leaves took
 * half an export's time). Given `hasher`, blocks are hashed on its thread as they are read ahead,
 * still each checked before the sink sees it; given `slots`, single leaves are read into them and
 * each given back once the sink is done with it (a node never is: its links' CIDs view its
 * bytes); given `readRun`, a node's leaves are read a run at a time ({@link RUN_BYTES}).
 * Memory: {@link READ_AHEAD} blocks and, given `readRun`, {@link RUNS_AT_ONCE} runs of
 * {@link RUN_BYTES}; the links of the nodes on the way down; the objects taken ahead (a root each).
 */
export async function walkStoredObjects<T extends StoredObject> (read: ReadStoredBlock, objects: AsyncIterable<T> | Iterable<T>, sink: StoredBlockSink, init: WalkObjectsInit<T> = {}): Promise<void> {
  const source = Symbol.asyncIterator in objects ? objects[Symbol.asyncIterator]() : (objects as Iterable<T>)[Symbol.iterator]()
  let exhausted = false
  let pulled: { readonly err: unknown } | undefined
  const queue: Array<Entry<T>> = []
  const tools: RunTools = { ...init, runs: init.readRun !== undefined ? new BlockSlots(RUNS_AT_ONCE, RUN_BYTES) : undefined }
  // A run's length: as many leaves as the largest seen so far would fill a run's buffer with.
  let largestLeaf = 256 * 1024
  const runLength = (): number => Math.max(1, Math.floor(RUN_BYTES / largestLeaf))
  const ahead = (): number => init.readRun !== undefined ? RUNS_AHEAD * runLength() : READ_AHEAD
  const runnable = (entry: Entry<T>): boolean => entry.reading === undefined && entry.cid.code === RAW && entry.cid.multihash.code === SHA2_256
  // A root read and checked is decoded at once and its links queued after it, so they are read ahead too.
  const expand = (entry: Entry<T>, checked: Checked | undefined): void => {
    if (entry.depth !== 0 || checked?.check !== 'ok' || entry.cid.code !== DAG_PB) return
    const at = queue.indexOf(entry)
    if (at < 0) return
    try {
      entry.node = decodeFileNode(checked.bytes, `block ${entry.cid.toString()} of ${entry.cid.toString()}`)
    } catch {
      // Named when its turn comes.
      return
    }
    const sizes = entry.node.linkSizes
    queue.splice(at + 1, 0, ...entry.node.links.map((cid, i) => ({ cid, depth: 1, hint: sizes[i], object: entry.object })))
  }
  const start = (at: number): Promise<Checked | undefined> => {
    const entry = queue[at] as Entry<T>
    if (entry.reading !== undefined) return entry.reading
    if (init.readRun !== undefined && runnable(entry)) {
      // This leaf and the unread raw leaves after it, one run: as many as their sizes (as their
      // parent says, else the largest leaf seen) fill a run's buffer with.
      const members = [entry]
      const size = (e: Entry<T>): number => e.hint !== undefined && e.hint > 0 ? e.hint : largestLeaf
      let filled = size(entry)
      for (let j = at + 1; j < queue.length && runnable(queue[j] as Entry<T>) && filled + size(queue[j] as Entry<T>) <= RUN_BYTES; j++) {
        members.push(queue[j] as Entry<T>)
        filled += size(queue[j] as Entry<T>)
      }
      const reading = readRunChecked(init.readRun, members.map(m => m.cid), tools)
      const readings = members.map((member, k) => {
        member.reading = reading.then(checked => checked[k])
        // Awaited in turn below; one left unread when the walk fails must not be unhandled.
        member.reading.catch(() => {})
        return member.reading
      })
      return readings[0] as Promise<Checked | undefined>
    }
    const reading = readChecked(read, entry.cid, init)
    entry.reading = entry.depth === 0 ? reading.then(checked => { expand(entry, checked); return checked }) : reading
    entry.reading.catch(() => {})
    return entry.reading
  }
  let current: Walking<T> | undefined
  try {
    for (;;) {
      init.signal?.throwIfAborted()
      while (!exhausted && pulled === undefined && queue.length < ahead()) {
        try {
          const next = await source.next()
          if (next.done === true) exhausted = true
          else queue.push({ cid: next.value.cid, depth: 0, object: { item: next.value, seen: new Map(), size: 0, blocks: 0 } })
        } catch (err) {
          // Taking an object ahead failed (the next one's making fetches, say): the objects before
          // it are walked first, and their own failure, if any, is the one named.
          pulled = { err }
          exhausted = true
        }
      }
      if (queue.length === 0) {
        if (pulled !== undefined) throw pulled.err
        break
      }
      // Runs of leaves as far as the window goes while fewer than RUNS_AT_ONCE are held; any other
      // block only within READ_AHEAD of the head (a chain of small objects must not put dozens of
      // blocks in flight). The head is read whatever (start(0) below).
      for (let i = 0; i < Math.min(ahead(), queue.length); i++) {
        const run = init.readRun !== undefined && runnable(queue[i] as Entry<T>)
        if (run ? (tools.runs?.lent ?? 0) < RUNS_AT_ONCE : i < READ_AHEAD) void start(i)
      }
      const entry = queue[0] as Entry<T>
      if (entry.object !== current) {
        if (current !== undefined) init.onObject?.(current.item, { size: current.size, blocks: current.blocks })
        current = entry.object
      }
      try {
        const checked = await start(0)
        queue.shift()
        await step(entry, checked)
      } catch (err) {
        throw init.failure !== undefined ? init.failure(entry.object.item, err) : err
      }
    }
    if (current !== undefined) init.onObject?.(current.item, { size: current.size, blocks: current.blocks })
  } finally {
    // Reads started ahead of a failure finish on their own; nothing waits on them.
    queue.length = 0
    if (!exhausted || pulled !== undefined) await source.return?.()
  }

  /** One block at the head, checked: handed over (or counted again, a repeat), its links queued. */
  async function step (entry: Entry<T>, checked: Checked | undefined): Promise<void> {
    const { object } = entry
    const root = object.item.cid
    const text = entry.cid.toString()
    const of = entry.depth === 0 ? '' : ` of ${root.toString()}`
    const again = object.seen.get(text)
    if (again !== undefined) {
      object.size += again
      release(checked, tools)
      return
    }
    if (checked === undefined) throw new ContentNotFoundError(`the service does not hold block ${text}${of}`)
    const { bytes, check } = checked
    if (check !== 'ok') {
      throw new IntegrityError(check === 'mismatch'
        ? `block ${text}${of} as stored does not hash to its CID: the service's data is damaged`
        : `block ${text} is hashed with a function cidsync cannot check (multihash 0x${entry.cid.multihash.code.toString(16)}), so it is not exported on trust`)
    }
    let links: CID[] = []
    let hints: number[] = []
    if (entry.cid.code === RAW) {
      if (bytes.byteLength > largestLeaf) largestLeaf = bytes.byteLength
      object.size += bytes.byteLength
      object.seen.set(text, bytes.byteLength)
    } else if (entry.cid.code === DAG_PB) {
      const node = entry.node ?? decodeFileNode(bytes, `block ${text} of ${root.toString()}`)
      object.size += node.data?.byteLength ?? 0
      object.seen.set(text, Number(node.fileSize))
      // A root's links were queued when it was read (expand).
      links = entry.node !== undefined ? [] : node.links
      hints = node.linkSizes
      if (node.links.length > 0 && entry.depth >= MAX_DEPTH) throw new IntegrityError(`${root.toString()}: its DAG is deeper than ${MAX_DEPTH} levels`)
    } else throw new IntegrityError(`block ${text} is neither raw nor dag-pb (codec 0x${entry.cid.code.toString(16)}): not a stored file's block`)
    const { maxBytes } = object.item
    if (maxBytes !== undefined && object.size > maxBytes) throw new IntegrityError(`${root.toString()} as stored holds more than the ${maxBytes} bytes it may`)
    await sink(entry.cid, bytes)
    // Read over by a later block: the sink is done with it.
    release(checked, tools)
    object.blocks++
    queue.unshift(...links.map((cid, i) => ({ cid, depth: entry.depth + 1, hint: hints[i], object })))
  }
}

/**
 * One object's blocks ({@link walkStoredObjects} of `root` alone): answers its file bytes
 * (repeats counted) and the blocks handed over.
 */
export async function walkStoredBlocks (read: ReadStoredBlock, root: CID, sink: StoredBlockSink, options: WalkTools & { readonly maxBytes?: number, readonly signal?: AbortSignal } = {}): Promise<{ size: number, blocks: number }> {
  let walked = { size: 0, blocks: 0 }
  await walkStoredObjects(read, [{ cid: root, maxBytes: options.maxBytes }], sink, { ...options, onObject: (_, result) => { walked = result } })
  return walked
}
