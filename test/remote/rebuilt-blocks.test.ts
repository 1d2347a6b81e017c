import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { cidProfile } from '../../src/content/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe.skipIf(EXTERNAL)('gateway client: blocks rebuilt from a whole file', () => {
  it('hands the sink blocks it may keep: each still hashes to its CID once the whole object was read', async () => {
    const service = await localServiceUnderTest()
    const path = join(await useTempDir(), 'object.bin')
    // Not a whole number of chunks of the HTTP body: leaves are gathered across its chunks.
    await writeFile(path, randomBytes(3 * 1024 * 1024 + 12345))
    const profile = cidProfile('kubo-cidv1')
    const { cid } = await service.clients.objects.put(path, profile)
    const kept: Array<{ cid: CID, bytes: Uint8Array }> = []
    // Held as a CAR writer holds a put until the file took it.
    await service.clients.gateway.fetchBlocks(cid, profile, async (c, bytes) => { kept.push({ cid: c, bytes }) })
    expect(kept.length).toBeGreaterThan(12)
    for (const block of kept) {
      const digest = await sha256.digest(block.bytes)
      expect(Buffer.from(digest.bytes).equals(Buffer.from(block.cid.multihash.bytes)), `block ${block.cid.toString()} hashes to its CID`).toBe(true)
    }
  })
})
