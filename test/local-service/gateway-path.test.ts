import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import * as dagPb from '@ipld/dag-pb'
import { exporter } from 'ipfs-unixfs-exporter'
import { CID } from 'multiformats/cid'
import { fetchBytes, fromBlocks, verifiedCar } from '../helpers/trustless.js'
import { serviceHolding, unixfsTree } from '../helpers/unixfs-tree.js'

/** The CID at `path` under `root`, and the blocks read to reach it, by ipfs-unixfs-exporter over `get`. */
async function exported (root: CID, path: string, get: (cid: CID) => Promise<Uint8Array>): Promise<{ cid: string, content: Buffer }> {
  const blockstore = { get: async function * (key: CID) { yield await get(key) } }
  const entry = await exporter(`${root.toString()}/${path}`, blockstore as unknown as Parameters<typeof exporter>[1])
  const chunks: Uint8Array[] = []
  if (entry.type === 'file' || entry.type === 'raw') for await (const chunk of entry.content()) chunks.push(chunk)
  return { cid: entry.cid.toString(), content: Buffer.concat(chunks) }
}

describe('the gateway\'s paths under a CID', () => {
  it('serves a file under directories, plain and HAMT-sharded, with X-Ipfs-Path and one X-Ipfs-Roots CID a segment', async () => {
    const deep = randomBytes(5_000)
    const files: Record<string, Uint8Array> = { 'a/b/deep.bin': deep, 'a/ünï cødé.txt': Buffer.from('unicode name') }
    // 300 entries in one directory: sharded past the importer's 256-byte threshold, several levels.
    for (let i = 0; i < 300; i++) files[`many/f${i}.txt`] = Buffer.from(`file ${i}`)
    const tree = await unixfsTree(files, { shardSplitThresholdBytes: 256 })
    const { url } = await serviceHolding(tree)
    const root = tree.root.toString()
    const get = async (cid: CID): Promise<Uint8Array> => tree.blocks.get(cid.toString())?.bytes ?? await Promise.reject(new Error('absent'))

    const answer = await fetchBytes(url, `/ipfs/${root}/a/b/deep.bin`)
    expect(answer).toMatchObject({ status: 200, complete: true, headers: { 'x-ipfs-path': `/ipfs/${root}/a/b/deep.bin` } })
    expect(answer.body.equals(deep)).toBe(true)
    const roots = (answer.headers['x-ipfs-roots'] as string).split(',')
    expect(roots.length).toBe(4)
    expect(roots[0]).toBe(root)
    expect(roots[3]).toBe((await exported(tree.root, 'a/b/deep.bin', get)).cid)

    const unicode = await fetchBytes(url, `/ipfs/${root}/a/${encodeURIComponent('ünï cødé.txt')}`)
    expect(unicode).toMatchObject({ status: 200, body: Buffer.from('unicode name') })

    // The sharded directory's children, found by the name's hash through its shards.
    const many = tree.blocks.get((await exported(tree.root, 'many', get)).cid)
    // Some names collide in the first shard: their lookups go through a sub-shard (a link named by its prefix alone).
    expect(dagPb.decode(many?.bytes ?? new Uint8Array()).Links.some(l => l.Name?.length === 2)).toBe(true)
    for (let i = 0; i < 300; i++) {
      const child = await fetchBytes(url, `/ipfs/${root}/many/f${i}.txt`)
      expect(child.status, `f${i}`).toBe(200)
      expect(child.body.toString()).toBe(`file ${i}`)
    }

    for (const missing of ['a/nope', 'many/f300.txt', 'a/b/deep.bin/more', 'nope/deeper']) {
      const gone = await fetchBytes(url, `/ipfs/${root}/${missing}`)
      expect(gone.status, missing).toBe(404)
    }
    expect((await fetchBytes(url, `/ipfs/${root}/${'x/'.repeat(200)}`)).status).toBe(400)
  })

  it('answers ?format=car on a path with the blocks along it and the target\'s, which an independent exporter walks from the root', async () => {
    const deep = randomBytes(5_000)
    const files: Record<string, Uint8Array> = { 'a/b/deep.bin': deep, 'a/other.bin': randomBytes(3_000) }
    for (let i = 0; i < 300; i++) files[`many/f${i}.txt`] = Buffer.from(`file ${i}`)
    const tree = await unixfsTree(files, { shardSplitThresholdBytes: 256 })
    const { url } = await serviceHolding(tree)
    const root = tree.root.toString()
    for (const [path, content] of [['a/b/deep.bin', deep], ['many/f123.txt', Buffer.from('file 123')]] as const) {
      const answer = await fetchBytes(url, `/ipfs/${root}/${path}?format=car`)
      expect(answer, path).toMatchObject({ status: 200, complete: true })
      const car = await verifiedCar(answer.body)
      expect(car.roots.map(r => r.toString())).toEqual([root])
      // Only what proves the path and makes the file: not the sibling file, not the other shards' entries.
      const exportedHere = await exported(tree.root, path, fromBlocks(car.blocks))
      expect(exportedHere.content.equals(content), path).toBe(true)
      expect(car.blocks.length, path).toBeLessThan(20)
      expect(new Set(car.blocks.map(b => b.cid.toString())).size).toBe(car.blocks.length)
    }
    // dag-scope=block: the path's blocks and the target's root block alone.
    const scoped = await verifiedCar((await fetchBytes(url, `/ipfs/${root}/a/b/deep.bin?format=car&dag-scope=block`)).body)
    expect(scoped.blocks.length).toBe(4)
    const target = (await exported(tree.root, 'a/b/deep.bin', fromBlocks(scoped.blocks))).cid
    expect(scoped.blocks.map(b => b.cid.toString()).at(-1)).toBe(target)
    // A raw block at the end of a path.
    const raw = await fetchBytes(url, `/ipfs/${root}/many/f5.txt?format=raw`)
    expect(raw).toMatchObject({ status: 200, body: Buffer.from('file 5') })
    // A block missing along the path: a 404 before any byte.
    const a = CID.parse((await exported(tree.root, 'a', fromBlocks([...tree.blocks.values()]))).cid)
    const gone = await serviceHolding(tree, [a.toString()])
    for (const query of ['', '?format=car']) expect((await fetchBytes(gone.url, `/ipfs/${root}/a/b/deep.bin${query}`)).status, query).toBe(404)
  })
})
