import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import type { CID } from 'multiformats/cid'
import { IntegrityError } from '../errors.js'

/** A dag-pb UnixFS node of a file, as the walkers over a file's blocks need it. */
export interface FileNode {
  /** Its children, in the file's order. */
  readonly links: CID[]
  /** The bytes it holds itself (before its children's), if any. */
  readonly data: Uint8Array | undefined
  /** The size of the file under it, as the node says (unchecked). */
  readonly fileSize: bigint
  /** Each link's size as the node says (`Tsize`: a raw leaf's own bytes; 0 where absent; unchecked, a hint). */
  readonly linkSizes: number[]
  /** The bytes of the file under each child, as the node says (unchecked). */
  readonly blockSizes: bigint[]
}

/**
 * Decodes a verified dag-pb block as a UnixFS file node. `label` names the block in the error
 * (`<cid> of <root>`). A block that is no dag-pb, no UnixFS, or UnixFS of another type than a
 * file is an {@link IntegrityError}: bytes that hash to their CID but cannot be the file asked for.
 */
export function decodeFileNode (bytes: Uint8Array, label: string): FileNode {
  let node: dagPb.PBNode
  let unixfs: UnixFS | undefined
  try {
    node = dagPb.decode(bytes)
    unixfs = node.Data === undefined ? undefined : UnixFS.unmarshal(node.Data)
  } catch (err) {
    throw new IntegrityError(`${label} is not a UnixFS node: ${(err as Error).message}`, { cause: err })
  }
  if (unixfs === undefined || (unixfs.type !== 'file' && unixfs.type !== 'raw')) throw new IntegrityError(`${label} is not a UnixFS file node (${unixfs?.type ?? 'no UnixFS data'})`)
  return { links: node.Links.map(link => link.Hash), data: unixfs.data, fileSize: unixfs.fileSize(), linkSizes: node.Links.map(link => link.Tsize ?? 0), blockSizes: unixfs.blockSizes }
}
