import * as dagPb from '@ipld/dag-pb'
import type { CID } from 'multiformats/cid'
import { flatCidText } from '../../content/index.js'
import type { ServiceParts } from '../parts.js'

const RAW_CODE = 0x55
const IDENTITY = 0x00

/**
 * Why the DAG under `root` cannot be pinned, as Kubo's `PinErrorMsg` says it ('' when every block
 * under it is stored: in the CAR just read, or here before). Kubo pins recursively, so a CAR
 * without some of its DAG's blocks is not pinned; this walks the DAG as that pin would. It follows
 * dag-pb links (raw blocks have none); a DAG of another codec is not checked, and says so. A raw
 * leaf is looked up as its node is read, never remembered: a DAG of millions of leaves (a whole
 * history with its content, under a plain root) walks in the memory of its nodes. At most
 * `maxLinks` links to nodes are followed (each remembered until the walk ends); a larger DAG is
 * not checked either, and says so.
 */
export async function pinError (parts: ServiceParts, root: CID, maxLinks: number): Promise<string> {
  const seen = new Set<string>()
  const pending: CID[] = [root]
  let followed = 1
  for (let cid = pending.pop(); cid !== undefined; cid = pending.pop()) {
    const text = flatCidText(cid)
    if (seen.has(text)) continue
    seen.add(text)
    if (cid.multihash.code === IDENTITY) continue
    if (!parts.blocks.has(cid)) {
      return cid.equals(root)
        ? `block ${text} is not stored: the CAR does not hold its root, and this service did not have it`
        : `the DAG is incomplete: block ${text} is neither in the CAR nor stored here`
    }
    if (cid.code === RAW_CODE) continue
    if (cid.code !== dagPb.code) return `block ${text} has codec 0x${cid.code.toString(16)}, whose links this service does not follow: the DAG was not checked whole, and is not pinned`
    let node: dagPb.PBNode
    try {
      node = dagPb.decode(await parts.blocks.get(cid))
    } catch (err) {
      return `block ${text} is not valid dag-pb: ${(err as Error).message.slice(0, 200)}`
    }
    for (let i = node.Links.length - 1; i >= 0; i--) {
      const child = (node.Links[i] as dagPb.PBLink).Hash
      if (child.multihash.code === IDENTITY) continue
      if (child.code === RAW_CODE) {
        if (!parts.blocks.has(child)) return `the DAG is incomplete: block ${flatCidText(child)} is neither in the CAR nor stored here`
        continue
      }
      if (++followed > maxLinks) return `the DAG links to more than ${maxLinks} nodes, more than this service checks in one import: it was not checked whole, and is not pinned`
      pending.push(child)
    }
  }
  return ''
}
