import { describe, expect, it } from 'vitest'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { walkStoredBlocks } from '../../src/exits/stored-blocks.js'

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
