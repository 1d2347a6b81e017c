import { describe, it, expect, onTestFinished } from 'vitest'
import { appendFile, mkdir, open as openFile, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import * as raw from 'multiformats/codecs/raw'
import Database from 'better-sqlite3'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { BlockStore } from '../../src/local-service/blocks.js'
import { openServiceDatabase } from '../../src/local-service/store.js'
import { createServiceClients } from '../../src/remote/index.js'
import { cidProfile } from '../../src/content/index.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const profile = cidProfile('kubo-cidv1')

async function open (dir: string): Promise<LocalService> {
  const local = await startLocalService({ dir })
  onTestFinished(async () => { await local.stop() })
  return local
}

/** An account on `local` that uploads a file and fetches a CID back verified. */
async function account (local: LocalService, work: string): Promise<{ put: (bytes: Buffer) => Promise<string>, get: (cid: string) => Promise<Buffer> }> {
  let apiKey: string | undefined
  const url = local.url
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => apiKey, sessionToken: () => undefined }, { retry: { baseDelayMs: 10, maxDelayMs: 50, attempts: 1 } })
  onTestFinished(async () => { await clients.close() })
  apiKey = (await clients.deals.login(newWalletKey())).apiKey
  // Each account its own names: two accounts writing one path at once would race. (Buffers are
  // compared with equals: a failing toEqual on 500 KB diffs them for many minutes.)
  const mine = randomBytes(4).toString('hex')
  let n = 0
  return {
    put: async bytes => {
      const path = join(work, `in-${mine}-${n++}.bin`)
      await writeFile(path, bytes)
      return (await clients.objects.put(path, profile)).cid
    },
    get: async cid => {
      const path = join(work, `out-${mine}-${n++}.bin`)
      await clients.objects.getFile(cid, profile, path)
      return await readFile(path)
    }
  }
}

/** A block store on a fresh service database in a temp dir, as the service opens it. */
async function storeInTempDir (packLimit?: number): Promise<{ root: string, db: Database.Database, store: BlockStore }> {
  const root = await useTempDir()
  const db = await openServiceDatabase(root)
  onTestFinished(() => { if (db.open) db.close() })
  return { root, db, store: new BlockStore(root, db, packLimit) }
}

/** A raw block of 64 random bytes and its CID. */
async function block (): Promise<{ cid: CID, bytes: Buffer }> {
  const bytes = randomBytes(64)
  return { cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes }
}

/** `count` raw blocks of `bytes` random bytes each put into `store` in turn, then flushed. */
async function putFlushed (store: BlockStore, count: number, bytes: number): Promise<Array<{ cid: CID, bytes: Buffer }>> {
  const blocks: Array<{ cid: CID, bytes: Buffer }> = []
  for (let i = 0; i < count; i++) {
    const random = randomBytes(bytes)
    const cid = CID.createV1(raw.code, await sha256.digest(random))
    store.put(cid, random)
    blocks.push({ cid, bytes: random })
  }
  store.flush()
  return blocks
}

describe('the local service\'s block store', () => {
  it('stores blocks in packs, and still reads the blocks/ files an older version wrote', async () => {
    const root = await useTempDir()
    const dir = join(root, 'service')
    // A data dir as the one-file-per-block versions left it: schema 1, blocks/<fan>/<cidv1>.
    const first = await open(dir)
    await first.stop()
    const db = new Database(join(dir, 'service.sqlite'))
    // Back to the first schema: the later steps' tables and columns dropped too.
    db.exec('DROP TABLE blocks; DROP TABLE packs; DROP TABLE IF EXISTS invitations; ALTER TABLE ipns_keys DROP COLUMN record; ALTER TABLE ipns_keys DROP COLUMN sequence; ALTER TABLE files DROP COLUMN deleted_at; PRAGMA user_version = 1')
    db.close()
    const old = Buffer.from('a block from before packs\n')
    const oldCid = CID.createV1(raw.code, await sha256.digest(old)).toString()
    await mkdir(join(dir, 'blocks', oldCid.slice(-3, -1)), { recursive: true })
    await writeFile(join(dir, 'blocks', oldCid.slice(-3, -1), oldCid), old)

    const local = await open(dir)
    const a = await account(local, root)
    expect((await a.get(oldCid)).equals(old)).toBe(true)
    const fresh = randomBytes(700_000)
    const cid = await a.put(fresh)
    expect((await a.get(cid)).equals(fresh)).toBe(true)
    expect((await readdir(join(dir, 'packs'))).filter(name => name.endsWith('.pack'))).toHaveLength(1)
    // Nothing new lands in blocks/.
    expect(await readdir(join(dir, 'blocks'), { recursive: true })).toHaveLength(2)
  })

  it('ignores bytes appended but never indexed (a kill before the fsync) and writes on in a new pack', async () => {
    const root = await useTempDir()
    const dir = join(root, 'service')
    const first = await open(dir)
    const a = await account(first, root)
    const kept = randomBytes(600_000)
    const cid = await a.put(kept)
    await first.stop()
    // What a kill -9 between a block's write and its index row leaves: a tail nothing points at.
    const [pack] = await readdir(join(dir, 'packs'))
    await appendFile(join(dir, 'packs', pack as string), randomBytes(100_000))

    const second = await open(dir)
    const b = await account(second, root)
    expect((await b.get(cid)).equals(kept)).toBe(true)
    const more = randomBytes(300_000)
    const moreCid = await b.put(more)
    expect((await b.get(moreCid)).equals(more)).toBe(true)
    expect(await readdir(join(dir, 'packs'))).toHaveLength(2)
  })

  it('lets two services on one directory write their own packs and read each other\'s blocks', async () => {
    const root = await useTempDir()
    const dir = join(root, 'service')
    const one = await account(await open(dir), root)
    const two = await account(await open(dir), root)
    const x = randomBytes(500_000)
    const y = randomBytes(500_000)
    const [cx, cy] = await Promise.all([one.put(x), two.put(y)])
    expect((await two.get(cx)).equals(x)).toBe(true)
    expect((await one.get(cy)).equals(y)).toBe(true)
    expect(await readdir(join(dir, 'packs'))).toHaveLength(2)
  })

  it('names a pack file gone from the data dir as damaged data (ERR_SERVICE_DATA_DAMAGED), not a bare ENOENT', async () => {
    const root = await useTempDir()
    const dir = join(root, 'service')
    const cid = await (await account(await open(dir), root)).put(randomBytes(1000))
    const other = await open(dir)
    for (const name of await readdir(join(dir, 'packs'))) await rm(join(dir, 'packs', name))
    const err = await other.readStoredBlock(CID.parse(cid)).then(() => undefined, (e: unknown) => e as { code?: string, message: string })
    expect(err?.code, err?.message).toBe('ERR_SERVICE_DATA_DAMAGED')
    expect(err?.message).toMatch(/pack 1 is missing/)
  })
})

describe('the block store past a pack\'s limit', () => {
  it('reads every block of a pack closed for appends, and closes without EBADF (failed before: its descriptor was closed while still the pack\'s reader)', async () => {
    const root = await useTempDir()
    const db = await openServiceDatabase(root)
    onTestFinished(() => { db.close() })
    // 3 blocks of 40 bytes a pack: ten blocks span four packs.
    const store = new BlockStore(root, db, 120)
    const blocks = await putFlushed(store, 10, 40)
    // Other files opened now take the numbers a closed descriptor would have freed.
    const others = await Promise.all([1, 2, 3].map(async i => { await writeFile(join(root, `other-${i}`), 'x'.repeat(40)); return await openFile(join(root, `other-${i}`), 'r') }))
    onTestFinished(async () => { for (const o of others) await o.close() })
    for (const b of blocks) expect(Buffer.from(await store.get(b.cid)).equals(b.bytes)).toBe(true)
    expect((await readdir(join(root, 'packs'))).length).toBe(4)
    expect(() => { store.close() }).not.toThrow()
  })
})

describe('the block store\'s flush that does not hold the thread', () => {
  it('commits the rows of the blocks put before it, after its fsync, and leaves those put meanwhile to their own flush', async () => {
    const { db, store } = await storeInTempDir()
    const a = await block()
    const b = await block()
    const rows = (): number => db.prepare('SELECT COUNT(*) FROM blocks').pluck().get() as number
    store.put(a.cid, a.bytes)
    const flushing = store.flushAsync()
    store.put(b.cid, b.bytes)
    expect(rows()).toBe(0)
    await flushing
    expect(rows()).toBe(1)
    expect(db.prepare('SELECT COUNT(*) FROM blocks WHERE cid = ?').pluck().get(a.cid.bytes)).toBe(1)
    // Both stay readable; b is durable after its own flush.
    expect(Buffer.from(await store.get(b.cid)).equals(b.bytes)).toBe(true)
    await store.flushAsync()
    expect(rows()).toBe(2)
    store.close()
  })
})

describe('the block store\'s group commit', () => {
  it('makes uploads ending together share fsyncs: one under way, one after it for every block put meanwhile, each caller answered once its blocks are committed', async () => {
    const { db, store } = await storeInTempDir()
    const committed = (cid: CID): boolean => db.prepare('SELECT COUNT(*) FROM blocks WHERE cid = ?').pluck().get(cid.bytes) === 1
    const blocks = await Promise.all(Array.from({ length: 5 }, block))
    const [a, b, c, d, e] = blocks as [typeof blocks[0], typeof blocks[0], typeof blocks[0], typeof blocks[0], typeof blocks[0]]
    store.put(a.cid, a.bytes)
    store.put(b.cid, b.bytes)
    const first = store.flushAsync()
    // Its blocks were written before the sync under way began: that sync answers it.
    const same = store.flushAsync()
    store.put(c.cid, c.bytes)
    const second = store.flushAsync()
    store.put(d.cid, d.bytes)
    const third = store.flushAsync()
    const seen: string[] = []
    await Promise.all([
      first.then(() => { seen.push('first'); expect(committed(a.cid) && committed(b.cid)).toBe(true) }),
      same.then(() => { seen.push('same'); expect(committed(a.cid) && committed(b.cid)).toBe(true) }),
      second.then(() => { seen.push('second'); expect(committed(c.cid)).toBe(true) }),
      third.then(() => { seen.push('third'); expect(committed(d.cid)).toBe(true) })
    ])
    expect(seen.sort()).toEqual(['first', 'same', 'second', 'third'])
    expect(store.syncs, 'fsyncs for four flushes of two rounds of writes').toBe(2)
    // Nothing pending: no fsync at all.
    await store.flushAsync()
    expect(store.syncs).toBe(2)
    store.put(e.cid, e.bytes)
    await store.flushAsync()
    expect(store.syncs).toBe(3)
    expect(committed(e.cid)).toBe(true)
    for (const x of blocks) expect(Buffer.from(await store.get(x.cid)).equals(x.bytes)).toBe(true)
    store.close()
  })
})

describe('the block store after a failed fsync', () => {
  it('commits none of the blocks pending then, fails every upload after it (one relying on a pending block too) with a 503 saying what to do, and stores again once reopened', async () => {
    const { root, db, store } = await storeInTempDir()
    const committed = (cid: CID): boolean => db.prepare('SELECT COUNT(*) FROM blocks WHERE cid = ?').pluck().get(cid.bytes) === 1
    const [a, b] = [await block(), await block()]
    store.put(a.cid, a.bytes)
    const before = process.env.CIDSYNC_FAILPOINT
    process.env.CIDSYNC_FAILPOINT = 'service:pack-fsync=EIO'
    onTestFinished(() => { if (before === undefined) delete process.env.CIDSYNC_FAILPOINT; else process.env.CIDSYNC_FAILPOINT = before })
    await expect(store.flushAsync()).rejects.toMatchObject({ status: 503, message: expect.stringContaining('failed to sync its data (EIO)') })
    if (before === undefined) delete process.env.CIDSYNC_FAILPOINT; else process.env.CIDSYNC_FAILPOINT = before
    // The next sync would report clean though the kernel may have dropped a's pages: a is never committed.
    const refused = { status: 503, message: expect.stringContaining('nothing more is stored until the service is restarted') }
    expect(() => { store.put(a.cid, a.bytes) }).toThrow(expect.objectContaining(refused))
    expect(() => { store.put(b.cid, b.bytes) }).toThrow(expect.objectContaining(refused))
    await expect(store.flushAsync()).rejects.toMatchObject(refused)
    expect(() => { store.flush() }).toThrow(expect.objectContaining(refused))
    // Nor is a served as stored meanwhile (failed before: the gateway read it until a restart).
    expect(store.has(a.cid)).toBe(false)
    await expect(store.get(a.cid)).rejects.toMatchObject({ code: 'ENOENT' })
    store.close()
    expect(committed(a.cid)).toBe(false)

    const reopened = new BlockStore(root, db)
    expect(reopened.has(a.cid)).toBe(false)
    reopened.put(b.cid, b.bytes)
    await reopened.flushAsync()
    expect(committed(b.cid)).toBe(true)
    reopened.close()
  })
  it('answers no flush whose sync was under way or queued when another failed: its blocks were pending then, and the next sync reports clean (failed before: the queued one committed them and answered)', async () => {
    const { BlockStore } = await import('../../src/local-service/blocks.js')
    const { openServiceDatabase } = await import('../../src/local-service/store.js')
    const root = await useTempDir()
    const db = await openServiceDatabase(root)
    onTestFinished(() => { if (db.open) db.close() })
    const store = new BlockStore(root, db)
    const block = async (): Promise<{ cid: CID, bytes: Buffer }> => { const bytes = randomBytes(64); return { cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes } }
    const committed = (cid: CID): boolean => db.prepare('SELECT COUNT(*) FROM blocks WHERE cid = ?').pluck().get(cid.bytes) === 1
    const [a, b] = [await block(), await block()]
    store.put(a.cid, a.bytes)
    // An upload's fsync under way, and another upload's queued behind it.
    const underWay = store.flushAsync()
    store.put(b.cid, b.bytes)
    const queued = store.flushAsync()
    underWay.catch(() => {})
    queued.catch(() => {})
    // Meanwhile a sync of the same pack fails (a dag import's flush here; a real EIO of the one under way alike).
    const before = process.env.CIDSYNC_FAILPOINT
    process.env.CIDSYNC_FAILPOINT = 'service:pack-fsync=EIO'
    onTestFinished(() => { if (before === undefined) delete process.env.CIDSYNC_FAILPOINT; else process.env.CIDSYNC_FAILPOINT = before })
    expect(() => { store.flush() }).toThrow(expect.objectContaining({ status: 503 }))
    if (before === undefined) delete process.env.CIDSYNC_FAILPOINT; else process.env.CIDSYNC_FAILPOINT = before
    const refused = { status: 503, message: expect.stringContaining('nothing more is stored until the service is restarted') }
    await expect(underWay).rejects.toMatchObject(refused)
    await expect(queued).rejects.toMatchObject(refused)
    expect(committed(a.cid)).toBe(false)
    expect(committed(b.cid)).toBe(false)
    store.close()
  })
})

describe('the block store\'s run of blocks read at once', () => {
  it('reads neighbours in a pack into the buffer it is lent, one after another; a block past its end into memory of its own; one not stored as undefined', async () => {
    // 3 blocks of 40 bytes a pack: a run across packs is read a span a pack.
    const { store } = await storeInTempDir(120)
    onTestFinished(() => { store.close() })
    const blocks = await putFlushed(store, 5, 40)
    const absent = await block()
    const into = new Uint8Array(150)
    // Out of order, with a repeat and a block not stored: each answered in its place.
    const asked = [blocks[0], blocks[1], absent, blocks[2], blocks[3], blocks[1], blocks[4]] as Array<{ cid: CID, bytes: Buffer }>
    const got = await store.getRun(asked.map(b => b.cid), into)
    expect(got).toHaveLength(asked.length)
    expect(got[2]).toBeUndefined()
    got.forEach((view, i) => { if (i !== 2) expect(Buffer.from(view as Uint8Array).equals((asked[i] as { bytes: Buffer }).bytes), `block ${i}`).toBe(true) })
    // The first three stored fit the 150 bytes lent, next to each other; the rest did not.
    expect(got.slice(0, 4).filter(view => view?.buffer === into.buffer)).toHaveLength(3)
    expect((got[1] as Uint8Array).byteOffset).toBe(40)
    expect((got[3] as Uint8Array).byteOffset).toBe(80)
    expect(got.slice(4).every(view => view?.buffer !== into.buffer)).toBe(true)
  })

  it('a pack shorter than its index says is named as damaged data, as a single read names it', async () => {
    const { root, store } = await storeInTempDir()
    onTestFinished(() => { store.close() })
    const a = await block()
    const b = await block()
    store.put(a.cid, a.bytes)
    store.put(b.cid, b.bytes)
    store.flush()
    const [pack] = await readdir(join(root, 'packs'))
    const handle = await openFile(join(root, 'packs', pack as string), 'r+')
    await handle.truncate(100)
    await handle.close()
    // a lies whole before the cut, b across it: b is the one named.
    await expect(store.getRun([a.cid, b.cid], new Uint8Array(1024))).rejects.toMatchObject({ code: 'ERR_SERVICE_DATA_DAMAGED', message: expect.stringContaining(`block ${b.cid.toString()}`) })
  })
})

describe('the block store\'s index rows read as they are', () => {
  it('a row placing a block past any block\'s size is damaged data, named, not a RangeError', async () => {
    const { db, store } = await storeInTempDir()
    onTestFinished(() => { store.close() })
    const a = await block()
    store.put(a.cid, a.bytes)
    store.flush()
    db.prepare('UPDATE blocks SET length = ? WHERE cid = ?').run(2 ** 40, a.cid.bytes)
    await expect(store.get(a.cid)).rejects.toMatchObject({ code: 'ERR_SERVICE_DATA_DAMAGED', message: expect.stringContaining(a.cid.toString()) })
    await expect(store.getRun([a.cid], new Uint8Array(1024))).rejects.toMatchObject({ code: 'ERR_SERVICE_DATA_DAMAGED' })
  })
})
