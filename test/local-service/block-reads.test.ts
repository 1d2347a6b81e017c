import { describe, it, expect, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import * as raw from 'multiformats/codecs/raw'
import { BlockReads } from '../../src/local-service/block-reads.js'
import { BlockStore } from '../../src/local-service/blocks.js'
import { PackReaders, type Place } from '../../src/local-service/pack-readers.js'
import { openServiceDatabase } from '../../src/local-service/store.js'
import { reclaimDir } from '../../src/local-service/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function block (size: number): Promise<{ cid: CID, bytes: Buffer }> {
  const bytes = randomBytes(size)
  return { cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes }
}

describe('a read whose pack a reclaim removed after the lookup (another process, between the two)', () => {
  it('looks the block up again and reads it where it went; a block dropped meanwhile is not stored', async () => {
    const dir = await useTempDir()
    const db = await openServiceDatabase(dir)
    onTestFinished(() => { if (db.open) db.close() })
    const store = new BlockStore(dir, db)
    const [kept, dead] = await Promise.all([block(4096), block(64 * 1024)])
    store.put(kept.cid, kept.bytes)
    store.put(dead.cid, dead.bytes)
    store.flush()
    store.close()
    db.prepare("INSERT INTO files (id, address, cid, file_name, mime_type, size, created_at, last_update) VALUES ('a', '0xa', ?, 'kept', '', 4096, 0, 0)").run(kept.cid.toString())
    const find = db.prepare('SELECT pack, offset, length FROM blocks WHERE cid = ?')
    const stale = new Map([kept, dead].map(b => [b.cid.toString(), find.get(b.cid.bytes) as Place]))

    // Another process's reclaim: the dead block dropped, the pack rewritten and its file removed.
    expect(await reclaimDir(dir)).toMatchObject({ blocksFreed: 1, packsRewritten: 1 })
    const moved = find.get(kept.cid.bytes) as Place
    expect(moved.pack).not.toBe(stale.get(kept.cid.toString())?.pack)

    // The lookup first answers what it found before the reclaim, as a read under way had.
    const looked = new Set<string>()
    const lookup = (cid: CID): { name: string, place: Place | undefined } => {
      const name = cid.toString()
      if (!looked.has(name)) { looked.add(name); return { name, place: stale.get(name) } }
      return { name, place: find.get(cid.bytes) as Place | undefined }
    }
    const readers = new PackReaders(join(dir, 'packs'), id => join(dir, 'packs', `${String(id).padStart(8, '0')}.pack`))
    onTestFinished(() => { readers.close() })
    const reads = new BlockReads(lookup, readers, () => undefined)
    expect(Buffer.from(await reads.get(kept.cid)).equals(kept.bytes)).toBe(true)
    await expect(reads.get(dead.cid)).rejects.toMatchObject({ code: 'ENOENT' })
    looked.clear()
    const [again, gone] = await reads.getRun([kept.cid, dead.cid], Buffer.alloc(1024 * 1024))
    expect(again !== undefined && Buffer.from(again).equals(kept.bytes)).toBe(true)
    expect(gone).toBeUndefined()
  })
})
