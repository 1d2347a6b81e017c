import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { sha256 } from './leaf.js'
import type { CidProfile } from './profiles.js'
import { blockCid, type TreeLink } from './unixfs-tree.js'

/**
 * Kubo's `Import.UnixFSHAMTDirectorySizeThreshold` default (256 KiB). A directory whose links
 * Kubo estimates at this size or more is sharded (a HAMT), which this builder does not make.
 */
export const HAMT_THRESHOLD_BYTES = 256 * 1024

/** One entry of a directory: its name and the node it links to. */
export interface DirectoryEntry { readonly name: string, readonly link: TreeLink }

/** A directory node's bytes, with its CID and sizes as a parent links to it. */
export interface DirectoryNode { readonly link: TreeLink, readonly block: Uint8Array }

const encoder = new TextEncoder()

/** Kubo's estimate of a plain directory's size: each link's name and CID bytes. */
export function estimatedDirectorySize (entries: readonly DirectoryEntry[]): number {
  let size = 0
  for (const entry of entries) size += encoder.encode(entry.name).byteLength + entry.link.cid.bytes.byteLength
  return size
}

/**
 * A plain UnixFS directory as `ipfs add` makes it: `Data` the directory type alone, one link a
 * child named as it is, sorted by the names' bytes (dag-pb's order), each `Tsize` the child's whole
 * DAG. Its CID follows the profile's version; its `fileSize` is the files' bytes under it.
 */
export function directoryNode (profile: CidProfile, entries: readonly DirectoryEntry[]): DirectoryNode {
  const named = entries.map(e => ({ e, bytes: encoder.encode(e.name) }))
  named.sort((a, b) => Buffer.compare(a.bytes, b.bytes))
  const block = dagPb.encode({
    Data: new UnixFS({ type: 'directory' }).marshal(),
    Links: named.map(({ e }) => ({ Hash: e.link.cid, Name: e.name, Tsize: e.link.treeSize }))
  })
  let fileSize = 0
  let treeSize = block.byteLength
  for (const entry of entries) {
    fileSize += entry.link.fileSize
    treeSize += entry.link.treeSize
  }
  return { link: { cid: blockCid(profile, dagPb.code, sha256(block)), fileSize, treeSize }, block }
}
