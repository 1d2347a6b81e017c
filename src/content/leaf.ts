import { createHash } from 'node:crypto'
import * as dagPb from '@ipld/dag-pb'
import { blockCid, rawLeafCid, type TreeLink } from './unixfs-tree.js'
import type { CidProfile } from './profiles.js'

export function sha256 (...parts: Uint8Array[]): Uint8Array {
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

/** The SHA-256 of one leaf block: the chunk itself (raw leaves) or its dag-pb encoding. */
export function leafDigest (profile: CidProfile, chunk: Uint8Array): Uint8Array {
  if (profile.rawLeaves) return sha256(chunk)
  const { prefix, suffix } = dagPbLeafFraming(chunk.byteLength)
  return sha256(prefix, chunk, suffix)
}

/** The link to a leaf from its digest and chunk length: what a parent node needs. */
export function leafLink (profile: CidProfile, digest: Uint8Array, length: number): TreeLink {
  if (profile.rawLeaves) return { cid: rawLeafCid(profile, digest), fileSize: length, treeSize: length }
  const { prefix, suffix } = dagPbLeafFraming(length)
  return { cid: blockCid(profile, dagPb.code, digest), fileSize: length, treeSize: prefix.byteLength + length + suffix.byteLength }
}

/**
 * The bytes of a leaf block: the chunk itself (raw leaves: not copied, so valid only as long as
 * the caller's bytes are) or its dag-pb encoding.
 */
export function leafBlock (profile: CidProfile, chunk: Uint8Array): Uint8Array {
  if (profile.rawLeaves) return chunk
  const { prefix, suffix } = dagPbLeafFraming(chunk.byteLength)
  const block = new Uint8Array(prefix.byteLength + chunk.byteLength + suffix.byteLength)
  block.set(prefix)
  block.set(chunk, prefix.byteLength)
  block.set(suffix, prefix.byteLength + chunk.byteLength)
  return block
}
