import type { CID } from 'multiformats/cid'

/** The multicodec of a raw leaf. */
const RAW = 0x55

/**
 * The blocks of an object imported with a raw-leaves profile, as the side that hashed its bytes
 * saw them: the leaves' CIDs in order (their bytes are the object's, `chunkSize` at a time, so
 * they are not kept), and the tree's other nodes whole (a few hundred bytes per 174 leaves). Handed
 * to a service in the same process, it stores the object without hashing its bytes again.
 */
export interface ObjectBlocks {
  /** CID bytes of each leaf, in the object's order. */
  readonly leaves: readonly Uint8Array[]
  /** CID bytes and bytes of every node above the leaves. */
  readonly nodes: ReadonlyArray<readonly [Uint8Array, Uint8Array]>
}

/** Records an object's blocks from a `CidBuilder`'s `onBlock` (raw-leaves profiles only). */
export class ObjectBlocksRecorder {
  private leaves: Uint8Array[] = []
  private nodes: Array<readonly [Uint8Array, Uint8Array]> = []

  /** For `CidBuilderInit.onBlock`. */
  readonly onBlock = (cid: CID, block: Uint8Array): void => {
    if (cid.code === RAW) this.leaves.push(cid.bytes)
    // Copied: the builder may reuse what it handed out.
    else this.nodes.push([cid.bytes, Uint8Array.prototype.slice.call(block)])
  }

  /** What was recorded since the last take; the recorder starts empty again. */
  take (): ObjectBlocks {
    const taken = { leaves: this.leaves, nodes: this.nodes }
    this.leaves = []
    this.nodes = []
    return taken
  }
}
