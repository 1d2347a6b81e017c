import { createHash } from 'node:crypto'
import type { CID } from 'multiformats/cid'

const SHA2_256 = 0x12
const IDENTITY = 0x00

/**
 * Whether a block's bytes are what its CID names: `ok`, `mismatch`, or `unsupported` (a hash
 * function cidsync does not compute, so it cannot tell: such a block is never taken on trust).
 */
export function checkBlock (cid: CID, bytes: Uint8Array): 'ok' | 'mismatch' | 'unsupported' {
  const { code, digest } = cid.multihash
  if (code === SHA2_256) return Buffer.from(createHash('sha256').update(bytes).digest()).equals(digest) ? 'ok' : 'mismatch'
  if (code === IDENTITY) return Buffer.from(bytes).equals(digest) ? 'ok' : 'mismatch'
  return 'unsupported'
}
