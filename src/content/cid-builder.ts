import { createHash, type Hash } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { BalancedTree, type TreeLink } from './unixfs-tree.js'
import { leafBlock, leafDigest, leafLink, sha256 } from './leaf.js'
import type { CidProfile } from './profiles.js'

export interface CidBuilderInit {
  /**
   * A chunk-sized buffer to gather partial chunks in; callers that hash many files pass one and
   * reuse it, so a small file costs no chunk-sized allocation.
   */
  readonly scratch?: Uint8Array
  /**
   * Told of every block (leaves, then each parent as it closes), for callers that store the DAG.
   * A raw leaf is the caller's (or the builder's reused) bytes: keep a copy to hold it past the call.
   */
  readonly onBlock?: (cid: CID, block: Uint8Array) => void
}

/**
 * Computes the CID that `ipfs add` gives a byte stream, from bytes fed in any slices. Memory stays
 * at one chunk plus one level of links per tree depth, whatever the stream's length.
 */
export class CidBuilder {
  private readonly tree: BalancedTree
  private pending: Uint8Array | undefined
  private pendingLength = 0
  private leaves = 0
  private bytes = 0

  private readonly onBlock: CidBuilderInit['onBlock']
  /**
   * Raw leaves no one keeps are hashed as their bytes come: a leaf's digest is the SHA-256 of its
   * bytes alone, so nothing is gathered into a chunk (no chunk-sized buffer a file, no copy).
   */
  private readonly streamed: boolean
  private leafHash: Hash | undefined
  private leafLength = 0

  constructor (private readonly profile: CidProfile, init: CidBuilderInit = {}) {
    this.onBlock = init.onBlock
    this.tree = new BalancedTree(profile, block => sha256(block), init.onBlock)
    this.streamed = profile.rawLeaves && init.onBlock === undefined
    this.pending = init.scratch !== undefined && init.scratch.byteLength >= profile.chunkSize ? init.scratch : undefined
  }

  /** Bytes fed so far. */
  get size (): number {
    return this.bytes
  }

  update (bytes: Uint8Array): this {
    let offset = 0
    this.bytes += bytes.byteLength
    if (this.streamed) {
      while (offset < bytes.byteLength) {
        const take = Math.min(this.profile.chunkSize - this.leafLength, bytes.byteLength - offset)
        ;(this.leafHash ??= createHash('sha256')).update(bytes.subarray(offset, offset + take))
        this.leafLength += take
        offset += take
        if (this.leafLength === this.profile.chunkSize) this.endStreamedLeaf()
      }
      return this
    }
    if (this.pendingLength === 0) {
      // Whole chunks straight from the caller's buffer: no copy on the hot path.
      while (bytes.byteLength - offset >= this.profile.chunkSize) {
        this.addLeaf(bytes.subarray(offset, offset + this.profile.chunkSize))
        offset += this.profile.chunkSize
      }
    }
    while (offset < bytes.byteLength) {
      const pending = this.pending ??= Buffer.allocUnsafe(this.profile.chunkSize)
      const take = Math.min(this.profile.chunkSize - this.pendingLength, bytes.byteLength - offset)
      pending.set(bytes.subarray(offset, offset + take), this.pendingLength)
      this.pendingLength += take
      offset += take
      if (this.pendingLength === this.profile.chunkSize) {
        this.addLeaf(pending.subarray(0, this.pendingLength))
        this.pendingLength = 0
      }
    }
    return this
  }

  /** Ends the stream and answers its root CID. The builder is spent afterwards. */
  finish (): CID {
    return this.finishLink().cid
  }

  /** Ends the stream and answers the root with its file size and DAG size (Kubo's `Size`). */
  finishLink (): TreeLink {
    if (this.streamed) {
      if (this.leafLength > 0 || this.leaves === 0) this.endStreamedLeaf()
      return this.tree.finish()
    }
    if (this.pendingLength > 0 || this.leaves === 0) {
      this.addLeaf(this.pending?.subarray(0, this.pendingLength) ?? new Uint8Array(0))
      this.pendingLength = 0
    }
    return this.tree.finish()
  }

  private endStreamedLeaf (): void {
    const digest = (this.leafHash ?? createHash('sha256')).digest()
    this.leaves++
    this.tree.addLeaf(leafLink(this.profile, digest, this.leafLength))
    this.leafHash = undefined
    this.leafLength = 0
  }

  private addLeaf (chunk: Uint8Array): void {
    this.leaves++
    const link = leafLink(this.profile, leafDigest(this.profile, chunk), chunk.byteLength)
    this.onBlock?.(link.cid, leafBlock(this.profile, chunk))
    this.tree.addLeaf(link)
  }
}
