import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { CidBuilder, cidProfile } from '../../src/content/index.js'
import { BlockSlots, storedFileBytes, type ReadStoredBlock } from '../../src/store/index.js'

/** A file's DAG under a small-chunk profile (many leaves, two levels), its blocks in a map. */
function fileDag (bytes: Uint8Array): { root: CID, blocks: Map<string, Uint8Array> } {
  const blocks = new Map<string, Uint8Array>()
  const builder = new CidBuilder({ ...cidProfile('kubo-cidv1'), chunkSize: 1000, maxLinks: 8 }, { onBlock: (cid, block) => { blocks.set(cid.toString(), Uint8Array.from(block)) } })
  builder.update(bytes)
  return { root: builder.finish(), blocks }
}

/** Reads a block into `into` when it fits, as the embedded store does; counts the leaves read into memory of their own. */
function reader (blocks: Map<string, Uint8Array>, damaged?: string): { read: ReadStoredBlock, own: () => number } {
  let own = 0
  const read: ReadStoredBlock = async (cid, into) => {
    const stored = blocks.get(cid.toString())
    if (stored === undefined) return undefined
    const bytes = into !== undefined && into.byteLength >= stored.byteLength ? into.subarray(0, stored.byteLength) : new Uint8Array(stored.byteLength)
    if (cid.code === 0x55 && bytes.buffer !== into?.buffer) own++
    bytes.set(stored)
    if (cid.toString() === damaged) bytes[0] = (bytes[0] ?? 0) ^ 1
    return bytes
  }
  return { read, own: () => own }
}

describe('storedFileBytes with slots (a lent stream)', () => {
  it('gives every byte through a few slots read into again, and has them all back at the end', async () => {
    const bytes = randomBytes(50_000)
    const { root, blocks } = fileDag(bytes)
    const { read, own } = reader(blocks)
    const slots = new BlockSlots(8, 1000)
    const copies: Buffer[] = []
    const views = new Set<ArrayBufferLike>()
    for await (const chunk of storedFileBytes(read, root, undefined, true, slots)) {
      copies.push(Buffer.from(chunk))
      views.add(chunk.buffer)
    }
    expect(Buffer.concat(copies).equals(bytes)).toBe(true)
    // Fifty leaves through a handful of buffers: the reads ahead and the leaf given out.
    expect(views.size).toBeLessThanOrEqual(8)
    expect(own()).toBe(0)
    expect(slots.lent).toBe(0)
  })

  it('gives its slots back when the caller stops early, and when a leaf does not hash to its CID', async () => {
    const bytes = randomBytes(50_000)
    const { root, blocks } = fileDag(bytes)
    const slots = new BlockSlots(8, 1000)
    let seen = 0
    for await (const chunk of storedFileBytes(reader(blocks).read, root, undefined, true, slots)) {
      seen += chunk.byteLength
      if (seen >= 10_000) break
    }
    // The reads ahead end after the break: their slots come back as each does.
    await new Promise(resolve => setImmediate(resolve))
    expect(slots.lent).toBe(0)
    const leaf = [...blocks.keys()].find(k => k.startsWith('bafkrei')) as string
    const damaged = reader(blocks, leaf)
    await expect((async () => { for await (const chunk of storedFileBytes(damaged.read, root, undefined, true, slots)) void chunk })()).rejects.toMatchObject({ code: 'ERR_INTEGRITY' })
    await new Promise(resolve => setImmediate(resolve))
    expect(slots.lent).toBe(0)
  })

  it('checking nodes alone: a damaged leaf comes as stored, one of another length than its node says is refused', async () => {
    const bytes = randomBytes(50_000)
    const { root, blocks } = fileDag(bytes)
    const leaf = [...blocks.keys()].find(k => k.startsWith('bafkrei')) as string
    const given: Buffer[] = []
    for await (const chunk of storedFileBytes(reader(blocks, leaf).read, root, undefined, 'nodes')) given.push(Buffer.from(chunk))
    expect(Buffer.concat(given).byteLength).toBe(bytes.byteLength)
    expect(Buffer.concat(given).equals(bytes)).toBe(false)
    // A stored length gone wrong: the leaf a byte short.
    const short: ReadStoredBlock = async (cid) => {
      const stored = blocks.get(cid.toString())
      return stored === undefined ? undefined : cid.toString() === leaf ? stored.subarray(0, stored.byteLength - 1) : stored
    }
    await expect((async () => { for await (const chunk of storedFileBytes(short, root, undefined, 'nodes')) void chunk })()).rejects.toThrow(/where its node says .*: the store is damaged/)
  })
})
