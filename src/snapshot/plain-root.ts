import { createHash } from 'node:crypto'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import type { Manifest } from './manifest.js'

/**
 * The plain root of a publish (docs/snapshot-format.md, "The plain root"): dag-pb nodes with no
 * data, whose links reach every object a restore at that publish and at every earlier point
 * needs, and the content its records name. A recursive pin of it holds the whole history. It
 * reveals CIDs, sizes and the history's shape (which objects each publish names, in what order).
 * The objects stay sealed, and its links carry no names but these.
 */

/** Most links a node carries: a node stays near 50 KiB, well under any block limit. */
export const ROOT_FANOUT = 1024

/** The names of a publish node's links, in the order dag-pb sorts them. */
export const ROOT_LINKS = { content: 'content', manifest: 'manifest', previous: 'previous', segments: 'segments' } as const

const SHA2_256 = 0x12

/**
 * A CID of the shape of every plain root (CIDv1, dag-pb, sha2-256) that names nothing: a CAR's
 * header written before its root is known names it, and the root takes its place (as long).
 */
export const ROOT_SHAPE = CID.createV1(dagPb.code, Digest.create(SHA2_256, new Uint8Array(32)))

/** A link to an object: its CID, and its size in bytes where the chain records it. */
export interface RootLink { readonly cid: CID, readonly size?: number }

export interface RootBlock { readonly cid: CID, readonly bytes: Uint8Array }

/** A node made: its CID, what a link to it carries as size, and its blocks (itself first, then those it made under it). */
export interface RootNode { readonly cid: CID, readonly size: number, readonly blocks: readonly RootBlock[] }

/** What a publish node links: the publish, its segments, the node of the publish before, and content (the head only). */
export interface PublishLinks {
  /** The publish: its manifest, or a `cidsync-sqlite/1` snapshot. */
  readonly manifest: CID
  /** Every segment its devices' lists name (none for a `/1` snapshot). */
  readonly segments: readonly RootLink[]
  /** The publish node of the publish before, when there is one. */
  readonly previous?: Pick<RootNode, 'cid' | 'size'>
  /** The content objects its records name: only on the node a CAR or a pin is rooted at. */
  readonly content?: readonly RootLink[]
}

function made (links: dagPb.PBLink[], under: readonly RootBlock[]): RootNode {
  const bytes = dagPb.encode({ Links: links })
  const digest = createHash('sha256').update(bytes).digest()
  const cid = CID.createV1(dagPb.code, Digest.create(SHA2_256, digest))
  const size = links.reduce((sum, link) => sum + (link.Tsize ?? 0), bytes.byteLength)
  return { cid, size, blocks: [{ cid, bytes }, ...under] }
}

function link (to: RootLink, name?: string): dagPb.PBLink {
  return { Hash: to.cid, ...(name === undefined ? {} : { Name: name }), ...(to.size === undefined ? {} : { Tsize: to.size }) }
}

/**
 * `links` under one node, in order, through a tree of unnamed nodes of at most `fanout` links
 * each: the first `fanout` links in the first node of the lowest level, and so on up. A list
 * that grows at its end keeps its full nodes. Undefined for no links.
 */
export function fanoutTree (links: readonly RootLink[], fanout = ROOT_FANOUT): RootNode | undefined {
  if (!Number.isSafeInteger(fanout) || fanout < 2) throw new RangeError(`a fanout of ${fanout}: expected a whole number of 2 or more`)
  if (links.length === 0) return undefined
  let level: ReadonlyArray<RootLink & { readonly blocks?: readonly RootBlock[] }> = links
  do {
    const next: RootNode[] = []
    for (let at = 0; at < level.length; at += fanout) {
      const children = level.slice(at, at + fanout)
      next.push(made(children.map(c => link(c)), children.flatMap(c => c.blocks ?? [])))
    }
    level = next
  } while (level.length > 1)
  return level[0] as RootNode
}

/**
 * The node of one publish: `manifest`, `segments` (a tree of them), `previous` (the node of the
 * publish before), and `content` (a tree of them) where given. Its blocks hold its own trees,
 * not the previous node's.
 */
export function publishNode (publish: PublishLinks, fanout = ROOT_FANOUT): RootNode {
  const segments = fanoutTree(publish.segments, fanout)
  const content = publish.content === undefined ? undefined : fanoutTree(publish.content, fanout)
  // Sorted by name, as dag-pb requires: content, manifest, previous, segments.
  const links: dagPb.PBLink[] = []
  if (content !== undefined) links.push(link(content, ROOT_LINKS.content))
  // A publish's own size is not in the chain (only its segments' are): no size, so every device makes the same node.
  links.push(link({ cid: publish.manifest }, ROOT_LINKS.manifest))
  if (publish.previous !== undefined) links.push(link(publish.previous, ROOT_LINKS.previous))
  if (segments !== undefined) links.push(link(segments, ROOT_LINKS.segments))
  return made(links, [...(segments?.blocks ?? []), ...(content?.blocks ?? [])])
}

/** A publish of a chain: its CID, and the segments it names (none for a `/1` snapshot). */
export interface ChainPublish { readonly cid: CID, readonly segments: readonly RootLink[] }

/**
 * The publish nodes of a chain given oldest first, each linking the one before it (the first
 * links `before` when given): oldest first, as made.
 */
export function chainNodes (publishes: readonly ChainPublish[], before?: Pick<RootNode, 'cid' | 'size'>, fanout = ROOT_FANOUT): RootNode[] {
  const nodes: RootNode[] = []
  let previous = before
  for (const publish of publishes) {
    const node = publishNode({ manifest: publish.cid, segments: publish.segments, previous }, fanout)
    nodes.push(node)
    previous = node
  }
  return nodes
}

/** Every segment a manifest's lists name, once, in the manifest's order, each with its size. */
export function segmentLinks (manifest: Pick<Manifest, 'devices'> | undefined): RootLink[] {
  const seen = new Set<string>()
  const links: RootLink[] = []
  for (const device of manifest?.devices ?? []) {
    for (const segment of device.segments) {
      if (seen.has(segment.cid)) continue
      seen.add(segment.cid)
      links.push({ cid: CID.parse(segment.cid), size: segment.bytes })
    }
  }
  return links
}

/** Whether a dag-pb node is one of a plain root's own (no data), not an object's (UnixFS nodes always have data). */
export function isPlainNode (node: dagPb.PBNode): boolean {
  return node.Data === undefined
}

/** The publish a plain root's node names (its `manifest` link), or undefined when it is not one. */
export function rootPublish (node: dagPb.PBNode): CID | undefined {
  if (!isPlainNode(node)) return undefined
  return node.Links.find(l => l.Name === ROOT_LINKS.manifest)?.Hash
}
