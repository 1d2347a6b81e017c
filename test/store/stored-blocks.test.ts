import { describe, expect, it, onTestFinished } from 'vitest'
import { createHash, randomBytes } from 'node:crypto'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { BlockHasher, BlockSlots, RUNS_AT_ONCE, walkStoredBlocks, walkStoredObjects, type ReadStoredBlock, type ReadStoredRun } from '../../src/store/index.js'

async function block (code: number, bytes: Uint8Array): Promise<{ cid: CID, bytes: Uint8Array }> {
  return { cid: CID.createV1(code, await sha256.digest(bytes)), bytes }
}

/** A file of three leaves, the first twice (as a file of repeated chunks has): 4 + 4 + 2 bytes. */
async function fileDag (): Promise<{ root: CID, a: CID, b: CID, store: Map<string, Uint8Array> }> {
  const a = await block(0x55, Buffer.from('aaaa'))
  const b = await block(0x55, Buffer.from('bb'))
  const data = new UnixFS({ type: 'file', blockSizes: [4n, 4n, 2n] }).marshal()
  const node = dagPb.encode(dagPb.prepare({ Data: data, Links: [a, a, b].map(l => ({ Hash: l.cid, Tsize: l.bytes.byteLength })) }))
  const root = await block(dagPb.code, node)
  const store = new Map([root, a, b].map(x => [x.cid.toString(), x.bytes]))
  return { root: root.cid, a: a.cid, b: b.cid, store }
}

describe('walkStoredBlocks', () => {
  it('hands over each block once, root first, and counts the file bytes with their repeats', async () => {
    const { root, a, b, store } = await fileDag()
    const got: string[] = []
    const result = await walkStoredBlocks(async cid => store.get(cid.toString()), root, async cid => { got.push(cid.toString()) })
    expect(got).toEqual([root.toString(), a.toString(), b.toString()])
    expect(result).toEqual({ size: 10, blocks: 3 })
  })

  it('a stored block that does not hash to its CID is named and never handed over; a missing one is named; an object past its bound stops', async () => {
    const { root, a, b, store } = await fileDag()
    const got: string[] = []
    const sink = async (cid: CID): Promise<void> => { got.push(cid.toString()) }
    const damaged = new Map(store)
    damaged.set(a.toString(), Buffer.from('aaab'))
    await expect(walkStoredBlocks(async cid => damaged.get(cid.toString()), root, sink)).rejects.toMatchObject({ code: 'ERR_INTEGRITY', message: expect.stringContaining(a.toString()) })
    expect(got).toEqual([root.toString()])

    const missing = new Map(store)
    missing.delete(b.toString())
    await expect(walkStoredBlocks(async cid => missing.get(cid.toString()), root, sink)).rejects.toMatchObject({ code: 'ERR_CONTENT_NOT_FOUND', message: expect.stringContaining(b.toString()) })

    await expect(walkStoredBlocks(async cid => store.get(cid.toString()), root, sink, { maxBytes: 7 })).rejects.toMatchObject({ code: 'ERR_INTEGRITY', message: expect.stringContaining('more than the 7 bytes') })
  })
})

describe('walkStoredBlocks with a hashing thread and slots', () => {
  /** A file of large leaves (hashed off this thread), the second twice: as fileDag, at 200 KiB a leaf (a slot's 256 fit it). */
  async function largeDag (): Promise<{ root: CID, leaves: CID[], store: Map<string, Uint8Array> }> {
    const leaves = await Promise.all([1, 2, 3].map(async () => await block(0x55, randomBytes(200 * 1024))))
    const linked = [leaves[0], leaves[1], leaves[1], leaves[2]] as Array<{ cid: CID, bytes: Uint8Array }>
    const data = new UnixFS({ type: 'file', blockSizes: linked.map(l => BigInt(l.bytes.byteLength)) }).marshal()
    const node = await block(dagPb.code, dagPb.encode(dagPb.prepare({ Data: data, Links: linked.map(l => ({ Hash: l.cid, Tsize: l.bytes.byteLength })) })))
    return { root: node.cid, leaves: leaves.map(l => l.cid), store: new Map([node, ...leaves].map(x => [x.cid.toString(), x.bytes])) }
  }

  /** A store that reads into the slot it is lent, as the local service does; it keeps each slot it was lent. */
  function lending (store: Map<string, Uint8Array>): { read: ReadStoredBlock, lent: Uint8Array[] } {
    const lent: Uint8Array[] = []
    return {
      lent,
      read: async (cid, into) => {
        const bytes = store.get(cid.toString())
        if (bytes === undefined || into === undefined || into.byteLength < bytes.byteLength) return bytes === undefined ? undefined : Buffer.from(bytes)
        lent.push(into)
        into.set(bytes)
        return into.subarray(0, bytes.byteLength)
      }
    }
  }

  it('hands over the same bytes in the same order as without them, the slots handed to the thread and used again', async () => {
    const { root, leaves, store } = await largeDag()
    const plain: Array<[string, Buffer]> = []
    await walkStoredBlocks(async cid => store.get(cid.toString()), root, async (cid, bytes) => { plain.push([cid.toString(), Buffer.from(bytes)]) })
    const hasher = new BlockHasher()
    onTestFinished(async () => { await hasher.close() })
    const { read, lent } = lending(store)
    const threaded: Array<[string, Buffer]> = []
    const result = await walkStoredBlocks(read, root, async (cid, bytes) => { threaded.push([cid.toString(), Buffer.from(bytes)]) }, { hasher, slots: new BlockSlots(4) })
    expect(threaded.map(([cid]) => cid)).toEqual([root, ...leaves].map(c => c.toString()))
    expect(threaded).toEqual(plain)
    expect(result).toEqual({ size: 4 * 200 * 1024, blocks: 4 })
    // A slot sent to the thread is detached here (its memory moved there and back).
    expect(lent.some(slot => slot.byteLength === 0)).toBe(true)
  })

  it('a large block that does not hash to its CID is refused and named when hashed off this thread, and never handed over', async () => {
    const { root, leaves, store } = await largeDag()
    const damaged = new Map(store)
    const bad = leaves[1] as CID
    const bytes = Buffer.from(store.get(bad.toString()) as Uint8Array)
    bytes[1000] = (bytes[1000] as number) ^ 1
    damaged.set(bad.toString(), bytes)
    const hasher = new BlockHasher()
    onTestFinished(async () => { await hasher.close() })
    const { read, lent } = lending(damaged)
    const got: string[] = []
    await expect(walkStoredBlocks(read, root, async cid => { got.push(cid.toString()) }, { hasher, slots: new BlockSlots(4) }))
      .rejects.toMatchObject({ code: 'ERR_INTEGRITY', message: expect.stringContaining(`block ${bad.toString()} of ${root.toString()} as stored does not hash to its CID`) })
    expect(got).toEqual([root.toString(), (leaves[0] as CID).toString()])
    expect(lent.some(slot => slot.byteLength === 0), 'hashed on the thread').toBe(true)
  })

  it('a hashing thread that stops fails the blocks it held (ERR_HASH_THREAD), never a hang; closed, it hashes on the calling thread', async () => {
    const hasher = new BlockHasher()
    const big = new Uint8Array(randomBytes(256 * 1024))
    const want = createHash('sha256').update(big).digest()
    const first = await hasher.sha256(new Uint8Array(big), true)
    expect(Buffer.from(first.digest).equals(want)).toBe(true)
    expect(Buffer.from(first.bytes).equals(Buffer.from(big))).toBe(true)
    const pending = expect(hasher.sha256(new Uint8Array(big), true)).rejects.toMatchObject({ code: 'ERR_HASH_THREAD' })
    await hasher.close()
    await pending
    const after = await hasher.sha256(new Uint8Array(big), true)
    expect(Buffer.from(after.digest).equals(want)).toBe(true)
  })
})

describe('walkStoredObjects: objects one after another, leaves read a run at a time', () => {
  /** Files of `leafBytes` leaves (the second leaf of each twice), in one store; and a reader of runs that reads into what it is lent as far as it holds. */
  /** `tsize`: what the node says of each leaf's size (its true size unless given: a lying node's). */
  async function store (files: number, leaves: number, leafBytes: number, tsize = (bytes: number): number => bytes): Promise<{ roots: CID[], blocks: Map<string, Uint8Array>, leavesOf: CID[][] }> {
    const blocks = new Map<string, Uint8Array>()
    const roots: CID[] = []
    const leavesOf: CID[][] = []
    for (let f = 0; f < files; f++) {
      const made = await Promise.all(Array.from({ length: leaves }, async () => await block(0x55, randomBytes(leafBytes))))
      const linked = [made[0], ...made.slice(1, 2), ...made.slice(1)] as Array<{ cid: CID, bytes: Uint8Array }>
      const data = new UnixFS({ type: 'file', blockSizes: linked.map(l => BigInt(l.bytes.byteLength)) }).marshal()
      const node = await block(dagPb.code, dagPb.encode(dagPb.prepare({ Data: data, Links: linked.map(l => ({ Hash: l.cid, Tsize: tsize(l.bytes.byteLength) })) })))
      for (const x of [node, ...made]) blocks.set(x.cid.toString(), x.bytes)
      roots.push(node.cid)
      leavesOf.push(made.map(m => m.cid))
    }
    return { roots, blocks, leavesOf }
  }
  const reader = (blocks: Map<string, Uint8Array>): { read: ReadStoredBlock, readRun: ReadStoredRun, runs: number[] } => {
    const runs: number[] = []
    return {
      runs,
      read: async cid => blocks.get(cid.toString()),
      readRun: async (cids, into) => {
        runs.push(cids.length)
        let used = 0
        return cids.map(cid => {
          const bytes = blocks.get(cid.toString())
          if (bytes === undefined) return undefined
          if (used + bytes.byteLength > into.byteLength) return Buffer.from(bytes)
          into.set(bytes, used)
          used += bytes.byteLength
          return into.subarray(used - bytes.byteLength, used)
        })
      }
    }
  }
  // Blocks compared by their digests: toEqual walks large buffers a byte at a time.
  const digest = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex')
  const alone = async (read: ReadStoredBlock, roots: CID[]): Promise<Array<[string, string]>> => {
    const got: Array<[string, string]> = []
    for (const root of roots) await walkStoredBlocks(read, root, async (cid, bytes) => { got.push([cid.toString(), digest(bytes)]) })
    return got
  }

  it('hands over the same blocks in the same order as each object walked alone, told once an object is whole, its runs hashed on the thread', async () => {
    const { roots, blocks } = await store(3, 20, 200 * 1024)
    const { read, readRun, runs } = reader(blocks)
    const hasher = new BlockHasher()
    onTestFinished(async () => { await hasher.close() })
    const got: Array<[string, string]> = []
    const told: Array<{ cid: string, size: number, blocks: number, handedOver: number }> = []
    await walkStoredObjects(read, roots.map(cid => ({ cid })), async (cid, bytes) => { got.push([cid.toString(), digest(bytes)]) }, {
      hasher, slots: new BlockSlots(4), readRun,
      onObject: (object, walked) => { told.push({ cid: object.cid.toString(), ...walked, handedOver: got.length }) }
    })
    expect(got).toEqual(await alone(read, roots))
    // Each object told after its last block, with its bytes (the repeated leaf counted twice).
    expect(told).toEqual(roots.map((cid, i) => ({ cid: cid.toString(), size: 21 * 200 * 1024, blocks: 21, handedOver: 21 * (i + 1) })))
    expect(runs.length, 'leaves read a run at a time').toBeLessThan(20)
  })

  it('a run holds as many leaves as their node\'s sizes say fit; a node that understates them: those past the buffer read into memory of their own, the same blocks', async () => {
    for (const tsize of [undefined, () => 1]) {
      const { roots, blocks } = await store(2, 6, 1536 * 1024, tsize)
      const { read, readRun } = reader(blocks)
      let own = 0
      const counting: ReadStoredRun = async (cids, into) => {
        const views = await readRun(cids, into)
        own += views.filter(view => view !== undefined && view.buffer !== into.buffer).length
        return views
      }
      const got: Array<[string, string]> = []
      await walkStoredObjects(read, roots.map(cid => ({ cid })), async (cid, bytes) => { got.push([cid.toString(), digest(bytes)]) }, { readRun: counting })
      expect(got).toEqual(await alone(read, roots))
      if (tsize === undefined) expect(own, 'true sizes: every leaf of a run in its buffer').toBe(0)
      else expect(own, 'understated sizes: the overflow read apart').toBeGreaterThan(0)
    }
  })

  it('many small objects read ahead hold no more than a few run buffers, however short their runs', async () => {
    const { roots, blocks } = await store(40, 4, 64 * 1024)
    const { read, readRun } = reader(blocks)
    const buffers = new Set<ArrayBufferLike>()
    const counting: ReadStoredRun = async (cids, into) => { buffers.add(into.buffer); return await readRun(cids, into) }
    const got: Array<[string, string]> = []
    await walkStoredObjects(read, roots.map(cid => ({ cid })), async (cid, bytes) => { got.push([cid.toString(), digest(bytes)]) }, { readRun: counting })
    expect(got).toEqual(await alone(read, roots))
    // Buffers are used again once given back (no hashing thread here: the same memory each time).
    expect(buffers.size).toBeLessThanOrEqual(RUNS_AT_ONCE + 1)
  })

  it('a damaged leaf inside a run fails its object, named through `failure`; nothing of it handed over; the objects are closed', async () => {
    const { roots, blocks, leavesOf } = await store(3, 12, 100 * 1024)
    const bad = (leavesOf[1] as CID[])[5] as CID
    const damaged = Buffer.from(blocks.get(bad.toString()) as Uint8Array)
    damaged[7] = (damaged[7] as number) ^ 1
    blocks.set(bad.toString(), damaged)
    const { read, readRun } = reader(blocks)
    const hasher = new BlockHasher()
    onTestFinished(async () => { await hasher.close() })
    let closed = false
    async function * objects (): AsyncGenerator<{ cid: CID, name: string }> {
      try {
        for (const [i, cid] of roots.entries()) yield { cid, name: `file ${i}` }
      } finally {
        closed = true
      }
    }
    const got: string[] = []
    const walking = walkStoredObjects(read, objects(), async cid => { got.push(cid.toString()) }, {
      hasher, readRun, failure: (object, err) => new Error(`${object.name}: ${(err as Error).message}`)
    })
    await expect(walking).rejects.toThrow(`file 1: block ${bad.toString()} of ${(roots[1] as CID).toString()} as stored does not hash to its CID`)
    expect(got).not.toContain(bad.toString())
    // The first object whole (its root and 12 leaves, the repeat handed over once), then the second's root and leaves up to the damaged one.
    expect(got.slice(13)).toEqual([(roots[1] as CID).toString(), ...(leavesOf[1] as CID[]).slice(0, 5).map(c => c.toString())])
    expect(closed, 'the objects\' generator was closed (its finally ran)').toBe(true)
  })

  it('taking the next object failing (its making fetches, say): the objects before it are walked first, and their own failure is the one thrown', async () => {
    const { roots, blocks, leavesOf } = await store(2, 6, 64 * 1024)
    const { read, readRun } = reader(blocks)
    async function * thenFails (): AsyncGenerator<{ cid: CID }> {
      for (const cid of roots) yield { cid }
      throw new Error('the next object could not be made')
    }
    const got: string[] = []
    await expect(walkStoredObjects(read, thenFails(), async cid => { got.push(cid.toString()) }, { readRun })).rejects.toThrow('the next object could not be made')
    expect(got, 'every block of the objects before it handed over first (a root and six leaves each)').toHaveLength(2 * 7)
    const gone = (leavesOf[1] as CID[])[2] as CID
    blocks.delete(gone.toString())
    await expect(walkStoredObjects(read, thenFails(), async () => {}, { readRun, failure: (object, err) => new Error(`${object.cid.toString()}: ${(err as Error).message}`) }))
      .rejects.toThrow(`${(roots[1] as CID).toString()}: the service does not hold block ${gone.toString()}`)
  })

  it('a leaf the store lacks inside a run is ERR_CONTENT_NOT_FOUND, named', async () => {
    const { roots, blocks, leavesOf } = await store(1, 8, 64 * 1024)
    const gone = (leavesOf[0] as CID[])[6] as CID
    blocks.delete(gone.toString())
    const { read, readRun } = reader(blocks)
    await expect(walkStoredObjects(read, roots.map(cid => ({ cid })), async () => {}, { readRun }))
      .rejects.toMatchObject({ code: 'ERR_CONTENT_NOT_FOUND', message: expect.stringContaining(gone.toString()) })
  })
})

describe('BlockHasher.sha256Run', () => {
  it('hashes every block of one buffer on the thread, the buffer moved there and back: the same digests and bytes', async () => {
    const hasher = new BlockHasher()
    onTestFinished(async () => { await hasher.close() })
    const memory = new Uint8Array(randomBytes(1024 * 1024))
    const copy = Buffer.from(memory)
    const views = [memory.subarray(0, 300_000), memory.subarray(300_000, 300_001), memory.subarray(400_000)]
    const done = await hasher.sha256Run(views, true)
    expect(memory.byteLength, 'moved to the thread').toBe(0)
    const ranges = [[0, 300_000], [300_000, 300_001], [400_000, copy.byteLength]] as const
    ranges.forEach(([from, to], i) => {
      expect(Buffer.from(done.digests[i] as Uint8Array).equals(createHash('sha256').update(copy.subarray(from, to)).digest())).toBe(true)
      expect(Buffer.from(done.blocks[i] as Uint8Array).equals(copy.subarray(from, to))).toBe(true)
    })
  })
})
