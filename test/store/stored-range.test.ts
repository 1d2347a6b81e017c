import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CidBuilder, cidProfile } from '../../src/content/index.js'
import { storedFileRange, type ReadStoredBlock } from '../../src/store/index.js'
import { ContentNotFoundError, IntegrityError } from '../../src/errors.js'

/** A file's DAG under a small-chunk profile (many leaves, three levels), its blocks in a map. */
function fileDag (bytes: Uint8Array): { root: CID, blocks: Map<string, Uint8Array> } {
  const blocks = new Map<string, Uint8Array>()
  const builder = new CidBuilder({ ...cidProfile('kubo-cidv1'), chunkSize: 1000, maxLinks: 4 }, { onBlock: (cid, block) => { blocks.set(cid.toString(), Uint8Array.from(block)) } })
  builder.update(bytes)
  return { root: builder.finish(), blocks }
}

/** Reads blocks from the map, each read counted; `damaged` comes back with a byte flipped. */
function reader (blocks: Map<string, Uint8Array>, damaged?: string): { read: ReadStoredBlock, reads: string[] } {
  const reads: string[] = []
  const read: ReadStoredBlock = async (cid) => {
    reads.push(cid.toString())
    const stored = blocks.get(cid.toString())
    if (stored === undefined) return undefined
    const bytes = Uint8Array.from(stored)
    if (cid.toString() === damaged) bytes[0] = (bytes[0] ?? 0) ^ 1
    return bytes
  }
  return { read, reads }
}

async function collect (chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Buffer[] = []
  for await (const chunk of chunks) out.push(Buffer.from(chunk))
  return Buffer.concat(out)
}

describe('a range of a stored file', () => {
  it('gives exactly the bytes of any range, reading only the blocks that hold them', async () => {
    const bytes = randomBytes(37_123)
    const { root, blocks } = fileDag(bytes)
    const leaves = [...blocks.keys()].filter(k => k.startsWith('bafkrei')).length
    for (const [offset, length] of [[0, 1], [0, 37_123], [999, 2], [1000, 1000], [5_500, 12_345], [37_000, 123], [36_999, 5000], [37_123, 10], [20_000, 0]] as const) {
      const { read, reads } = reader(blocks)
      const got = await collect(storedFileRange(read, root, { offset, length }))
      expect(got.equals(bytes.subarray(offset, offset + length)), `${offset}+${length}`).toBe(true)
      const leavesRead = reads.filter(r => r.startsWith('bafkrei')).length
      expect(leavesRead, `${offset}+${length}`).toBe(length === 0 || offset >= bytes.byteLength ? 0 : Math.floor((Math.min(offset + length, bytes.byteLength) - 1) / 1000) - Math.floor(offset / 1000) + 1)
      expect(leavesRead).toBeLessThanOrEqual(leaves)
    }
  })

  it('refuses a block that does not hash to its CID, inside the range, and never reads one outside it', async () => {
    const bytes = randomBytes(20_000)
    const { root, blocks } = fileDag(bytes)
    // The leaf holding bytes 10,000-10,999: found by reading that range alone.
    const probe = reader(blocks)
    await collect(storedFileRange(probe.read, root, { offset: 10_000, length: 1 }))
    const leaf = probe.reads.at(-1) as string
    await expect(collect(storedFileRange(reader(blocks, leaf).read, root, { offset: 10_500, length: 10 }))).rejects.toThrow(IntegrityError)
    expect((await collect(storedFileRange(reader(blocks, leaf).read, root, { offset: 0, length: 5000 }))).equals(bytes.subarray(0, 5000))).toBe(true)
    // The root damaged: nothing comes out.
    await expect(collect(storedFileRange(reader(blocks, root.toString()).read, root, { offset: 0, length: 10 }))).rejects.toThrow(IntegrityError)
    // A block the store lacks.
    const without = new Map(blocks)
    without.delete(leaf)
    await expect(collect(storedFileRange(reader(without).read, root, { offset: 10_000, length: 10 }))).rejects.toThrow(ContentNotFoundError)
  })

  it('refuses a node whose recorded sizes do not match its leaves: its bytes cannot be found by range', async () => {
    const left = Uint8Array.from(randomBytes(100))
    const right = Uint8Array.from(randomBytes(100))
    const blocks = new Map<string, Uint8Array>()
    const leafCid = (b: Uint8Array): CID => { const c = new CidBuilder({ ...cidProfile('kubo-cidv1'), chunkSize: 1000 }, { onBlock: (cid, block) => { blocks.set(cid.toString(), Uint8Array.from(block)) } }); c.update(b); return c.finish() }
    const [a, b] = [leafCid(left), leafCid(right)]
    // The node says its first child holds 50 bytes, not 100.
    const data = new UnixFS({ type: 'file', blockSizes: [50n, 100n] }).marshal()
    const node = dagPb.encode(dagPb.prepare({ Data: data, Links: [{ Hash: a, Tsize: 100 }, { Hash: b, Tsize: 100 }] }))
    const root = CID.createV1(dagPb.code, await sha256.digest(node))
    blocks.set(root.toString(), node)
    await expect(collect(storedFileRange(reader(blocks).read, root, { offset: 10, length: 10 }))).rejects.toThrow(/holds 100 bytes where its node says 50/)
  })
})
