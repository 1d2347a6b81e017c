import { CID } from 'multiformats/cid'
import { chainNodes, publishNode, type RootBlock, type RootLink } from '../snapshot/index.js'

/** A publish of the chain an export walked: its CID, and the segments its manifest names (none for a `/1` snapshot). */
export interface WalkedPublish { readonly cid: string, readonly segments: readonly RootLink[] }

/** The plain root a CAR is rooted at: its CID, and its blocks, root first. */
export interface ExportRoot { readonly root: CID, readonly blocks: readonly RootBlock[] }

/**
 * The plain root of an export (docs/snapshot-format.md, "The plain root"): the head's publish
 * node, linking its segments, the node of each publish before it in turn, and with `content` the
 * content objects. Without content it is the node a publish of the head links as its previous:
 * the same CID on every device. `publishes`: newest first, as the chain walks.
 */
export function exportRoot (publishes: readonly WalkedPublish[], content?: readonly RootLink[]): ExportRoot {
  const [head, ...older] = publishes
  if (head === undefined) throw new RangeError('an export holds at least one publish')
  const chain = chainNodes([...older].reverse().map(p => ({ cid: CID.parse(p.cid), segments: p.segments })))
  const root = publishNode({ manifest: CID.parse(head.cid), segments: head.segments, previous: chain.at(-1), content })
  // Root first, then each publish before it in turn: the order a walk from the root meets them.
  return { root: root.cid, blocks: [...root.blocks, ...chain.reverse().flatMap(node => node.blocks)] }
}
