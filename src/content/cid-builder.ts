import { createHash } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import * as dagPb from '@ipld/dag-pb'
import { BalancedTree, blockCid, rawLeafCid, type TreeLink } from './unixfs-tree.js'
import type { CidProfile } from './profiles.js'

function sha256 (...parts: Uint8Array[]): Uint8Array {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return hash.digest()
}

function varint (value: number): number[] {
  const bytes: number[] = []
  while (value >= 0x80) {
    bytes.push((value % 0x80) | 0x80)
    value = Math.floor(value / 0x80)
  }
  bytes.push(value)
  return bytes
}

/**
 * A dag-pb leaf is `PBNode{Data: UnixFS{Type: File, Data: chunk, filesize}}`. Its bytes around the
 * chunk are a few varints, so the chunk is hashed in place rather than copied into an encoding.
 */
function dagPbLeafFraming (length: number): { prefix: Uint8Array, suffix: Uint8Array } {
  const dataField = length > 0 ? [0x12, ...varint(length)] : []
  const sizeField = [0x18, ...varint(length)]
  const unixfsLength = 2 + dataField.length + length + sizeField.length
  return {
    prefix: Uint8Array.from([0x0a, ...varint(unixfsLength), 0x08, 0x02, ...dataField]),
    suffix: Uint8Array.from(sizeField)
  }
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

  /**
   * @param scratch - a chunk-sized buffer to gather partial chunks in; callers that hash many
   * files pass one and reuse it, so a small file costs no chunk-sized allocation.
   */
  constructor (private readonly profile: CidProfile, scratch?: Uint8Array) {
    this.tree = new BalancedTree(profile, block => sha256(block))
    this.pending = scratch !== undefined && scratch.byteLength >= profile.chunkSize ? scratch : undefined
  }

  /** Bytes fed so far. */
  get size (): number {
    return this.bytes
  }

  update (bytes: Uint8Array): this {
    let offset = 0
    this.bytes += bytes.byteLength
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
    if (this.pendingLength > 0 || this.leaves === 0) {
      this.addLeaf(this.pending?.subarray(0, this.pendingLength) ?? new Uint8Array(0))
      this.pendingLength = 0
    }
    return this.tree.finish().cid
  }

  private addLeaf (chunk: Uint8Array): void {
    this.leaves++
    this.tree.addLeaf(this.leafLink(chunk))
  }

  private leafLink (chunk: Uint8Array): TreeLink {
    if (this.profile.rawLeaves) {
      return { cid: rawLeafCid(this.profile, sha256(chunk)), fileSize: chunk.byteLength, treeSize: chunk.byteLength }
    }
    const { prefix, suffix } = dagPbLeafFraming(chunk.byteLength)
    const digest = sha256(prefix, chunk, suffix)
    return {
      cid: blockCid(this.profile, dagPb.code, digest),
      fileSize: chunk.byteLength,
      treeSize: prefix.byteLength + chunk.byteLength + suffix.byteLength
    }
  }
}
