import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { create as createDigest } from 'multiformats/hashes/digest'
import type { CidProfile } from './profiles.js'
import { InternalError } from '../errors.js'

/** One node of the tree as its parent links to it. */
export interface TreeLink {
  readonly cid: CID
  /** Bytes of file content under this node. */
  readonly fileSize: number
  /** Bytes of encoded blocks under this node, itself included (dag-pb `Tsize`). */
  readonly treeSize: number
}

const RAW_CODE = 0x55
const SHA256_CODE = sha256.code

/** Builds the CID of a block from its SHA-256 digest under a profile's CID version. */
export function blockCid (profile: CidProfile, codec: number, digest: Uint8Array): CID {
  const multihash = createDigest(SHA256_CODE, digest)
  return profile.cidVersion === 0 ? CID.createV0(multihash as never) : CID.createV1(codec, multihash)
}

export function rawLeafCid (profile: CidProfile, digest: Uint8Array): CID {
  return blockCid(profile, RAW_CODE, digest)
}

/**
 * The balanced layout of Kubo and ipfs-unixfs-importer, built as leaves arrive: full groups of
 * `maxLinks` become parents at once, so memory holds at most `maxLinks` links per level.
 */
export class BalancedTree {
  private readonly levels: TreeLink[][] = [[]]
  private readonly hashBlock: (block: Uint8Array) => Uint8Array

  /** @param onBlock - told of each interior block as it is made, for callers that store the DAG. */
  constructor (private readonly profile: CidProfile, hashBlock: (block: Uint8Array) => Uint8Array, private readonly onBlock?: (cid: CID, block: Uint8Array) => void) {
    this.hashBlock = hashBlock
  }

  addLeaf (link: TreeLink): void {
    this.push(0, link)
  }

  /** Closes every open level and answers the root; a lone leaf is its own root. */
  finish (): TreeLink {
    const leaves = this.levels[0] ?? []
    if (this.levels.length === 1 && leaves.length === 1) return leaves[0] as TreeLink
    for (let level = 0; level < this.levels.length; level++) {
      const links = this.levels[level] as TreeLink[]
      const isTop = level === this.levels.length - 1
      if (isTop && links.length === 1) return links[0] as TreeLink
      if (links.length > 0) {
        this.levels[level] = []
        this.push(level + 1, this.parentOf(links))
      }
    }
    throw new InternalError('a balanced tree did not close to one root')
  }

  private push (level: number, link: TreeLink): void {
    const links = this.levels[level] ?? (this.levels[level] = [])
    links.push(link)
    if (links.length === this.profile.maxLinks) {
      this.levels[level] = []
      this.push(level + 1, this.parentOf(links))
    }
  }

  private parentOf (children: TreeLink[]): TreeLink {
    let fileSize = 0
    let childrenTreeSize = 0
    for (const child of children) {
      fileSize += child.fileSize
      childrenTreeSize += child.treeSize
    }
    const data = new UnixFS({ type: 'file', blockSizes: children.map(c => BigInt(c.fileSize)) })
    const block = dagPb.encode({
      Data: data.marshal(),
      Links: children.map(c => ({ Hash: c.cid, Name: '', Tsize: c.treeSize }))
    })
    const cid = blockCid(this.profile, dagPb.code, this.hashBlock(block))
    this.onBlock?.(cid, block)
    return { cid, fileSize, treeSize: block.byteLength + childrenTreeSize }
  }
}
