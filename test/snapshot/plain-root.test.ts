import { describe, expect, it } from 'vitest'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { chainNodes, fanoutTree, isPlainNode, publishNode, rootPublish, ROOT_FANOUT, type RootBlock, type RootLink, type RootNode } from '../../src/snapshot/index.js'

/** `n` raw objects' links, each with a size. */
async function objects (n: number, tag = 'o'): Promise<RootLink[]> {
  return await Promise.all(Array.from({ length: n }, async (_, i) => {
    const bytes = new TextEncoder().encode(`${tag}-${i}`)
    return { cid: CID.createV1(raw.code, await sha256.digest(bytes)), size: 1000 + i }
  }))
}

/** Every block checked against its CID (hashed here), by CID text. */
async function blocksOf (node: RootNode): Promise<Map<string, Uint8Array>> {
  const blocks = new Map<string, Uint8Array>()
  for (const block of node.blocks) {
    const digest = await sha256.digest(block.bytes)
    expect(Buffer.from(digest.bytes).equals(Buffer.from(block.cid.multihash.bytes)), `${block.cid.toString()} hashes to its CID`).toBe(true)
    expect(block.cid.code).toBe(dagPb.code)
    blocks.set(block.cid.toString(), block.bytes)
  }
  return blocks
}

/** The objects under a tree, in order, and each node's link count and depth, walked with @ipld/dag-pb. */
function walk (top: CID, blocks: ReadonlyMap<string, Uint8Array>): { leaves: string[], nodes: Array<{ links: number, depth: number }> } {
  const leaves: string[] = []
  const nodes: Array<{ links: number, depth: number }> = []
  const visit = (cid: CID, depth: number): void => {
    const bytes = blocks.get(cid.toString())
    if (bytes === undefined) { leaves.push(cid.toString()); return }
    const node = dagPb.decode(bytes)
    expect(node.Data).toBeUndefined()
    expect(node.Links.every(l => l.Name === undefined)).toBe(true)
    nodes.push({ links: node.Links.length, depth })
    for (const link of node.Links) visit(link.Hash, depth + 1)
  }
  visit(top, 0)
  return { leaves, nodes }
}

describe('the plain root\'s fanout tree', () => {
  it('links every object once, in order, through nodes of at most `fanout` links, all leaves at one depth', async () => {
    const links = await objects(10)
    const tree = fanoutTree(links, 4) as RootNode
    const blocks = await blocksOf(tree)
    const { leaves, nodes } = walk(tree.cid, blocks)
    expect(leaves).toEqual(links.map(l => l.cid.toString()))
    // 10 links: three nodes below (4, 4, 2), one above them.
    expect(nodes).toEqual([{ links: 3, depth: 0 }, { links: 4, depth: 1 }, { links: 4, depth: 1 }, { links: 2, depth: 1 }])
    expect(blocks.size).toBe(4)
    // A link to a node carries its block and everything under it.
    const sizes = [...blocks.values()].reduce((sum, b) => sum + b.byteLength, 0) + links.reduce((sum, l) => sum + (l.size ?? 0), 0)
    expect(tree.size).toBe(sizes)
    expect(dagPb.decode(blocks.get(tree.cid.toString()) as Uint8Array).Links.map(l => l.Tsize)).toEqual(tree.blocks.slice(1).map(b => b.bytes.byteLength + sizeUnder(b)))

    function sizeUnder (block: RootBlock): number {
      return dagPb.decode(block.bytes).Links.reduce((sum, l) => sum + (l.Tsize ?? 0), 0)
    }
  })

  it('grows a level only past fanout^depth links, and keeps its full nodes when links are added at the end', async () => {
    const links = await objects(17)
    expect(walk((fanoutTree(links.slice(0, 1), 4) as RootNode).cid, await blocksOf(fanoutTree(links.slice(0, 1), 4) as RootNode)).nodes).toEqual([{ links: 1, depth: 0 }])
    const sixteen = fanoutTree(links.slice(0, 16), 4) as RootNode
    expect(Math.max(...walk(sixteen.cid, await blocksOf(sixteen)).nodes.map(n => n.depth))).toBe(1)
    const seventeen = fanoutTree(links, 4) as RootNode
    expect(Math.max(...walk(seventeen.cid, await blocksOf(seventeen)).nodes.map(n => n.depth))).toBe(2)
    // The four full nodes of the first 16 are the same blocks in the tree of 17.
    const lowest = (tree: RootNode): string[] => tree.blocks.filter(b => dagPb.decode(b.bytes).Links.every(l => l.Hash.code === raw.code)).map(b => b.cid.toString())
    expect(lowest(seventeen).slice(0, 4)).toEqual(lowest(sixteen))
    expect(fanoutTree([], 4)).toBeUndefined()
    expect(() => fanoutTree(links, 1)).toThrow(RangeError)
  })

  it('at its default fanout, keeps every node far under a block limit', async () => {
    const links = await objects(ROOT_FANOUT * 2 + 5)
    const tree = fanoutTree(links) as RootNode
    const blocks = await blocksOf(tree)
    const { leaves, nodes } = walk(tree.cid, blocks)
    expect(leaves.length).toBe(links.length)
    expect(nodes.map(n => n.links)).toEqual([3, ROOT_FANOUT, ROOT_FANOUT, 5])
    for (const bytes of blocks.values()) expect(bytes.byteLength).toBeLessThan(256 * 1024)
  })
})

describe('a publish node', () => {
  it('names its manifest, segments, previous and content links, carries no data, and a chain links each publish to the one before', async () => {
    const [m1, m2] = await objects(2, 'manifest')
    const segments = await objects(3, 'segment')
    const content = await objects(5, 'content')
    const chain = chainNodes([{ cid: (m1 as RootLink).cid, segments: segments.slice(0, 1) }, { cid: (m2 as RootLink).cid, segments }])
    expect(chain.length).toBe(2)
    const first = dagPb.decode((chain[0] as RootNode).blocks[0]?.bytes as Uint8Array)
    expect(first.Links.map(l => l.Name)).toEqual(['manifest', 'segments'])
    const second = dagPb.decode((chain[1] as RootNode).blocks[0]?.bytes as Uint8Array)
    expect(second.Links.map(l => l.Name)).toEqual(['manifest', 'previous', 'segments'])
    expect(second.Links[1]?.Hash.equals((chain[0] as RootNode).cid)).toBe(true)
    expect(isPlainNode(second)).toBe(true)
    expect(rootPublish(second)?.equals((m2 as RootLink).cid)).toBe(true)

    // The head with content: the same links and one more; without content, the chain's node itself.
    const head = publishNode({ manifest: (m2 as RootLink).cid, segments, previous: chain[0], content })
    const node = dagPb.decode(head.blocks[0]?.bytes as Uint8Array)
    expect(node.Links.map(l => l.Name)).toEqual(['content', 'manifest', 'previous', 'segments'])
    expect(node.Links.find(l => l.Name === 'manifest')?.Tsize).toBeUndefined()
    expect(publishNode({ manifest: (m2 as RootLink).cid, segments, previous: chain[0] }).cid.equals((chain[1] as RootNode).cid)).toBe(true)
    // An object's node (UnixFS data) is not one of the root's.
    expect(isPlainNode({ Data: Uint8Array.of(8, 2), Links: [] })).toBe(false)
    expect(rootPublish({ Links: [] })).toBeUndefined()
  })
})
