import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import * as raw from 'multiformats/codecs/raw'
import { BlockStore } from '../../src/local-service/blocks.js'
import { openServiceDatabase } from '../../src/local-service/store.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('block store: packs past their limit', () => {
  it('reads every block of a pack closed for appends, and closes cleanly (failed before: its descriptor was closed, reads and close hit EBADF)', async () => {
    const dir = await useTempDir()
    const db = await openServiceDatabase(dir)
    const store = new BlockStore(dir, db, 64 * 1024)
    onTestFinished(() => { if (db.open) db.close() })
    const blocks: Array<{ cid: CID, bytes: Uint8Array }> = []
    for (let i = 0; i < 12; i++) {
      const bytes = randomBytes(20_000)
      const cid = CID.createV1(raw.code, await sha256.digest(bytes))
      store.put(cid, bytes)
      store.flush()
      blocks.push({ cid, bytes })
    }
    expect((await readdir(join(dir, 'packs'))).length).toBeGreaterThan(2)
    for (const { cid, bytes } of blocks) expect(Buffer.from(await store.get(cid)).equals(Buffer.from(bytes)), cid.toString()).toBe(true)
    expect(() => store.close()).not.toThrow()
    db.close()
  })
})
