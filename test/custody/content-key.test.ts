import { describe, expect, it } from 'vitest'
import { createHmac, hkdfSync, randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { contentMasterKey, fileKey } from '../../src/custody/index.js'

describe('content keys', () => {
  it('derive from the snapshot key as docs/content-format.md writes it, never equal to it, and differ under another key', async () => {
    const snapshotKey = randomBytes(32)
    const cid = CID.createV1(0x55, await sha256.digest(new TextEncoder().encode('a file')))
    const master = contentMasterKey(snapshotKey)
    // What the format says, written out here: content stored by any version must open under it.
    expect(master.equals(Buffer.from(hkdfSync('sha256', snapshotKey, 'cidsync-content/1', 'master', 32)))).toBe(true)
    expect(fileKey(master, cid).equals(createHmac('sha256', master).update('file').update(cid.bytes).digest())).toBe(true)
    expect(master.equals(snapshotKey)).toBe(false)
    // Equal files under one key: one key (stored once). Under another key: nothing in common.
    expect(fileKey(master, cid).equals(fileKey(contentMasterKey(Buffer.from(snapshotKey)), cid))).toBe(true)
    expect(fileKey(master, cid).equals(fileKey(contentMasterKey(randomBytes(32)), cid))).toBe(false)
    expect(() => contentMasterKey(randomBytes(16))).toThrow(RangeError)
  })
})
