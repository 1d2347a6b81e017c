import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { CID } from 'multiformats/cid'
import { checkBlock, cidProfile, fileCid, type CidProfile } from '../../src/content/index.js'
import { ContentNotFoundError, IntegrityError } from '../../src/errors.js'
import type { ObjectStore, StoreProgressEvent } from '../../src/store/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** Small leaves and narrow nodes: a 40 KB object is a DAG three levels deep. */
const DEEP: CidProfile = { ...cidProfile('kubo-cidv1'), chunkSize: 1000, maxLinks: 4 }
const PROFILE = cidProfile('kubo-cidv1')

/** A store under test, made fresh for each test, and what the suite needs to damage it. */
export interface StoreUnderTest {
  readonly store: ObjectStore
  /** Makes the stored bytes of `cid` wrong, as a damaged disk or a lying service would. */
  readonly damage: (cid: string) => Promise<void>
  /** Whether a deleted object's bytes may still be read (a service reclaims space later). */
  readonly deleteKeepsBytes?: boolean
}

const joined = (slabs: readonly Uint8Array[]): Buffer => Buffer.concat(slabs.map(s => Buffer.from(s.buffer, s.byteOffset, s.byteLength)))

async function readAll (stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

async function listed (store: ObjectStore): Promise<string[]> {
  const cids: string[] = []
  for await (const info of store.list()) cids.push(info.cid)
  return cids
}

async function aFile (bytes: Buffer): Promise<string> {
  const path = join(await useTempDir(), 'in.bin')
  await writeFile(path, bytes)
  return path
}

/**
 * The guarantees written on `ObjectStore`, run against one implementation. Every store runs this
 * same suite: a new backend is done when it passes.
 */
export function objectStoreConformance (name: string, make: () => Promise<StoreUnderTest>): void {
  describe(`${name}: the ObjectStore guarantees`, () => {
    it('put answers the CID the bytes hash to; read-after-write: stat, has, list and every read find it', async () => {
      const { store } = await make()
      const bytes = randomBytes(40_000)
      const path = await aFile(bytes)
      const events: StoreProgressEvent[] = []
      const put = await store.put(path, DEEP, { onProgress: (e) => { events.push(e) } })
      expect(put).toEqual({ cid: (await fileCid(path, DEEP)).cid.toString(), size: bytes.byteLength })
      expect(events.at(-1)).toEqual({ type: 'store:put:progress', detail: { sent: bytes.byteLength, total: bytes.byteLength } })
      expect(await store.has(put.cid)).toBe(true)
      expect(await store.stat(put.cid)).toMatchObject({ cid: put.cid, size: bytes.byteLength })
      expect(await listed(store)).toContain(put.cid)
      const to = join(await useTempDir(), 'out.bin')
      expect(await store.getFile(put.cid, DEEP, to)).toMatchObject({ size: bytes.byteLength })
      expect((await readFile(to)).equals(bytes)).toBe(true)
      // Private whatever the umask: an object may be a user's file in plain, or sealed bytes of one.
      expect((await stat(to)).mode & 0o777).toBe(0o600)
      expect(joined(await store.getBytes(put.cid, DEEP)).equals(bytes)).toBe(true)
      let into: Buffer | undefined
      await store.getInto(put.cid, DEEP, async (stream) => { into = await readAll(stream) })
      expect(into?.equals(bytes)).toBe(true)
      if (store.stream !== undefined) {
        const chunks: Uint8Array[] = []
        for await (const chunk of store.stream(put.cid, { maxBytes: bytes.byteLength })) chunks.push(chunk)
        expect(joined(chunks).equals(bytes)).toBe(true)
        // Lent: each chunk is the caller's only until it asks for the next, so it is copied at once.
        const copies: Buffer[] = []
        for await (const chunk of store.stream(put.cid, { maxBytes: bytes.byteLength, lend: true })) copies.push(Buffer.from(chunk))
        expect(Buffer.concat(copies).equals(bytes)).toBe(true)
      }
    })

    it('an empty file is an object too', async () => {
      const { store } = await make()
      const put = await store.put(await aFile(Buffer.alloc(0)), PROFILE)
      expect(put.size).toBe(0)
      expect(joined(await store.getBytes(put.cid, PROFILE)).byteLength).toBe(0)
    })

    it('the same bytes put twice: the same CID, one object listed', async () => {
      const { store } = await make()
      const bytes = randomBytes(3000)
      const first = await store.put(await aFile(bytes), PROFILE)
      const second = await store.put(await aFile(bytes), PROFILE)
      expect(second.cid).toBe(first.cid)
      expect((await listed(store)).filter(c => c === first.cid)).toHaveLength(1)
    })

    it('a put whose bytes are not the CID expected is refused, and leaves no object under that CID', async () => {
      const { store } = await make()
      const other = (await fileCid(await aFile(randomBytes(100)), PROFILE)).cid.toString()
      const path = await aFile(randomBytes(5000))
      await expect(store.put(path, PROFILE, { expectedCid: other })).rejects.toBeInstanceOf(IntegrityError)
      expect(await store.has(other)).toBe(false)
      expect(await listed(store)).not.toContain(other)
    })

    it('an object it does not hold: ContentNotFoundError for every read, nothing written; has and stat say so', async () => {
      const { store } = await make()
      const absent = (await fileCid(await aFile(randomBytes(64)), PROFILE)).cid.toString()
      const to = join(await useTempDir(), 'out.bin')
      await expect(store.getFile(absent, PROFILE, to)).rejects.toBeInstanceOf(ContentNotFoundError)
      await expect(store.getBytes(absent, PROFILE)).rejects.toBeInstanceOf(ContentNotFoundError)
      await expect(stat(to)).rejects.toThrow()
      expect(await store.has(absent)).toBe(false)
      expect(await store.stat(absent)).toBeUndefined()
      expect(await store.delete(absent)).toBe(false)
    })

    it('bytes that are not the CID\'s are refused (IntegrityError): no file renamed into place, no bytes answered', async () => {
      const { store, damage } = await make()
      const bytes = randomBytes(40_000)
      const { cid } = await store.put(await aFile(bytes), DEEP)
      await damage(cid)
      const to = join(await useTempDir(), 'out.bin')
      await expect(store.getFile(cid, DEEP, to)).rejects.toBeInstanceOf(IntegrityError)
      await expect(stat(to)).rejects.toThrow()
      await expect(store.getBytes(cid, DEEP)).rejects.toBeInstanceOf(IntegrityError)
      // The reader may have read them, or been stopped: either way the read fails.
      await expect(store.getInto(cid, DEEP, async (stream) => { await readAll(stream) })).rejects.toBeInstanceOf(IntegrityError)
    })

    it('more bytes than the caller accepts: refused, nothing written', async () => {
      const { store } = await make()
      const { cid } = await store.put(await aFile(randomBytes(40_000)), DEEP)
      const to = join(await useTempDir(), 'out.bin')
      await expect(store.getFile(cid, DEEP, to, { maxBytes: 1000 })).rejects.toThrow()
      await expect(stat(to)).rejects.toThrow()
      await expect(store.getBytes(cid, DEEP, { maxBytes: 1000 })).rejects.toThrow()
    })

    it('blocks: every block of each object, each hashing to its CID, the root the object\'s; told once each object is whole', async () => {
      const { store } = await make()
      const one = await store.put(await aFile(randomBytes(40_000)), DEEP)
      const two = await store.put(await aFile(randomBytes(700)), PROFILE)
      const blocks = new Map<string, Uint8Array>()
      const whole: Array<{ cid: string, size: number }> = []
      async function * objects (): AsyncGenerator<{ cid: string, profile: CidProfile }> {
        yield { cid: one.cid, profile: DEEP }
        yield { cid: two.cid, profile: PROFILE }
      }
      await store.blocks(objects(), async (cid, bytes) => { blocks.set(cid.toString(), Uint8Array.prototype.slice.call(bytes)) }, {
        onObject: (object, walked) => { whole.push({ cid: object.cid, size: walked.size }) }
      })
      expect(whole).toEqual([{ cid: one.cid, size: 40_000 }, { cid: two.cid, size: 700 }])
      expect(blocks.has(one.cid) && blocks.has(two.cid)).toBe(true)
      // 40 leaves under a DAG of at most 4 links a node.
      expect(blocks.size).toBeGreaterThan(40)
      for (const [cid, bytes] of blocks) expect(checkBlock(CID.parse(cid), bytes)).toBe('ok')
    })

    it('blocks of an object whose bytes are wrong: the failure named through `failure`', async () => {
      const { store, damage } = await make()
      const { cid } = await store.put(await aFile(randomBytes(40_000)), DEEP)
      await damage(cid)
      async function * objects (): AsyncGenerator<{ cid: string, profile: CidProfile, label: string }> { yield { cid, profile: DEEP, label: 'the one' } }
      await expect(store.blocks(objects(), async () => {}, { failure: (object, err) => new Error(`${object.label}: ${(err as Error).message}`) }))
        .rejects.toThrow(/^the one: /)
    })

    it('delete: stat and list no longer show it; a second delete answers false', async () => {
      const { store, deleteKeepsBytes } = await make()
      const kept = await store.put(await aFile(randomBytes(500)), PROFILE)
      const { cid } = await store.put(await aFile(randomBytes(600)), PROFILE)
      expect(await store.delete(cid)).toBe(true)
      expect(await store.stat(cid)).toBeUndefined()
      expect(await store.has(cid)).toBe(false)
      expect(await listed(store)).toEqual([kept.cid])
      expect(await store.delete(cid)).toBe(false)
      if (deleteKeepsBytes !== true) await expect(store.getBytes(cid, PROFILE)).rejects.toBeInstanceOf(ContentNotFoundError)
    })

    it('deleteMany: removes each listed one, answers only those it held, keeps the rest', async () => {
      const { store } = await make()
      const kept = await store.put(await aFile(randomBytes(500)), PROFILE)
      const gone = await Promise.all([700, 800].map(async n => await store.put(await aFile(randomBytes(n)), PROFILE)))
      const absent = (await store.put(await aFile(randomBytes(900)), PROFILE)).cid
      expect(await store.delete(absent)).toBe(true)
      const answer = await store.deleteMany([...gone.map(g => g.cid), absent])
      expect({ removed: [...answer.removed].sort(), refused: answer.refused }).toEqual({ removed: gone.map(g => g.cid).sort(), refused: [] })
      for (const g of gone) expect(await store.has(g.cid)).toBe(false)
      expect(await listed(store)).toEqual([kept.cid])
      expect(await store.deleteMany([])).toEqual({ removed: [], refused: [] })
      // Asked again: nothing is left of them to remove.
      expect((await store.deleteMany(gone.map(g => g.cid))).removed).toEqual([])
    })

    it('deleteMany with storedBefore: what was stored before it goes, what was stored again since stays', async () => {
      const { store } = await make()
      const old = await store.put(await aFile(randomBytes(700)), PROFILE)
      const bytes = randomBytes(800)
      const again = await store.put(await aFile(bytes), PROFILE)
      const listedAt = Date.now() + 1
      // A file's time comes from a coarser clock than Date.now(): the next put is well after the listing.
      while (Date.now() <= listedAt + 50) await new Promise(resolve => setTimeout(resolve, 5))
      // Another device stores the same bytes again, after the caller listed them as old.
      await store.put(await aFile(bytes), PROFILE)
      expect(await store.deleteMany([old.cid, again.cid], { storedBefore: listedAt })).toEqual({ removed: [old.cid], refused: [] })
      expect(await store.has(old.cid)).toBe(false)
      expect(await store.has(again.cid)).toBe(true)
    })

    it('deleteMany with storedBefore racing a put of the same object: the object stored again stays', async () => {
      const { store } = await make()
      const file = await aFile(randomBytes(500))
      const lost: number[] = []
      // Rounds in turn, each delete started a little later than the last: its put lands before it, during it or after it.
      for (let round = 0; round < 40; round++) {
        const { cid } = await store.put(file, PROFILE)
        const listedAt = Date.now() + 1
        while (Date.now() <= listedAt + 20) await new Promise(resolve => setTimeout(resolve, 2))
        await Promise.all([
          (async () => {
            await new Promise(resolve => setTimeout(resolve, round % 10))
            await store.deleteMany([cid], { storedBefore: listedAt })
          })(),
          store.put(file, PROFILE)
        ])
        if (!(await store.has(cid))) lost.push(round)
      }
      expect(lost).toEqual([])
    })

    it('an aborted signal ends a put and a read at once, with the abort', async () => {
      const { store } = await make()
      const path = await aFile(randomBytes(5000))
      const { cid } = await store.put(path, PROFILE)
      const aborted = AbortSignal.abort()
      await expect(store.put(await aFile(randomBytes(5000)), PROFILE, { signal: aborted })).rejects.toThrow()
      await expect(store.getFile(cid, PROFILE, join(await useTempDir(), 'out.bin'), { signal: aborted })).rejects.toThrow()
      await expect(store.getBytes(cid, PROFILE, { signal: aborted })).rejects.toThrow()
      expect(await listed(store)).toEqual([cid])
    })
  })
}
