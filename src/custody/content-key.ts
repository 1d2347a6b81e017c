import { createHmac, hkdfSync } from 'node:crypto'
import type { CID } from 'multiformats/cid'

const DOMAIN = 'cidsync-content/1'

/**
 * The key every file key of a device's content derives from (docs/content-format.md, "Sealing").
 * Derived from the snapshot key, never equal to it, so a content key leaks nothing of the
 * snapshots' key and the other way round.
 */
export function contentMasterKey (snapshotKey: Uint8Array): Buffer {
  if (snapshotKey.byteLength !== 32) throw new RangeError(`a snapshot key is 32 bytes, not ${snapshotKey.byteLength}`)
  return Buffer.from(hkdfSync('sha256', snapshotKey, DOMAIN, 'master', 32))
}

/**
 * The key one file's content is sealed under: equal files (same CID) get equal keys under the same
 * master key, which is what lets two devices store a file once; without the master key nobody can
 * compute it from the CID, which is what keeps a guess of a file's content from being confirmed.
 */
export function fileKey (masterKey: Uint8Array, cid: CID): Buffer {
  return createHmac('sha256', masterKey).update('file').update(cid.bytes).digest()
}
