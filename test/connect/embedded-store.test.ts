import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { CID } from 'multiformats/cid'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { createServiceClients, GatewayClient, HttpClient, ServiceObjectStore, UploadClient, type ServiceClients } from '../../src/remote/index.js'
import { EmbeddedObjectStore, type LocalReads } from '../../src/connect/index.js'
import type { ObjectStore, ReadStoredBlock } from '../../src/store/index.js'
import { CidBuilder, cidProfile, type CidProfile } from '../../src/content/index.js'
import { IntegrityError, ServiceDataDamagedError } from '../../src/errors.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { SealPool } from '../../src/custody/seal-pool.js'
import { SNAPSHOT_PROFILE } from '../../src/sync/read/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** Small leaves and narrow nodes: a 20 KB file is a DAG three levels deep. */
const DEEP: CidProfile = { ...cidProfile('kubo-cidv1'), chunkSize: 1000, maxLinks: 4 }

/** A local service with one account, signed in over HTTP; stopped when the test ends. */
async function account (): Promise<{ dir: string, local: LocalService, clients: ServiceClients, apiKey: string }> {
  const dir = await useTempDir()
  const local = await startLocalService({ dir: join(dir, 'service') })
  onTestFinished(async () => { await local.stop() })
  let apiKey: string | undefined
  const clients = createServiceClients({ dealUrl: local.url, apiUrl: local.url, pointerUrl: local.url, uploadUrl: local.url, gateways: [local.url] }, { apiKey: () => apiKey, sessionToken: () => undefined })
  onTestFinished(async () => { await clients.close() })
  const key = (await clients.deals.login(newWalletKey())).apiKey
  apiKey = key
  return { dir, local, clients, apiKey: key }
}

async function stored (bytes: Buffer, profile = DEEP): Promise<{ local: LocalService, cid: string, apiKey: string }> {
  const { dir, local, clients, apiKey } = await account()
  await writeFile(join(dir, 'in.bin'), bytes)
  return { local, cid: (await clients.objects.put(join(dir, 'in.bin'), profile)).cid, apiKey }
}

/** The embedded store over `local`, its packs read through `readStored`, its gateway over HTTP. */
function client (local: LocalService, readStored: ReadStoredBlock): ObjectStore {
  const http = new HttpClient({ service: 'gateway', baseUrl: local.url, retry: { attempts: 1 } })
  onTestFinished(async () => { await http.close() })
  const overHttp = new ServiceObjectStore(new UploadClient(http), new GatewayClient([http]), http, 'the service under test')
  return new EmbeddedObjectStore(overHttp, local, () => undefined, { block: readStored, run: async (cids) => await Promise.all(cids.map(async cid => await readStored(cid))) })
}

/** The store's blocks with the first byte of every raw leaf flipped, as a disk that damaged them would give them. */
function damagedLeaves (local: LocalService): ReadStoredBlock {
  return async (block) => {
    const got = await local.readStoredBlock(block)
    if (got === undefined || block.code !== 0x55) return got
    const flipped = Buffer.from(got)
    flipped[0] = (flipped[0] as number) ^ 1
    return flipped
  }
}

const joined = (slabs: readonly Uint8Array[]): Buffer => Buffer.concat(slabs.map(s => Buffer.from(s.buffer, s.byteOffset, s.byteLength)))
const fileFetches = (local: LocalService): number => local.requestLog().filter(r => r.route === 'gateway').length
/** Small slabs: an object spans several. */
const slab = (): Uint8Array => new Uint8Array(new SharedArrayBuffer(4096))

describe('the embedded store: which objects the account lists', () => {
  it('answers in this process on the service\'s thread, else from one pass of the listing', async () => {
    const { local, cid, apiKey } = await stored(randomBytes(5_000))
    const other = (await stored(randomBytes(5_000))).cid
    const listings = (): number => local.requestLog().filter(r => r.route === 'files_uploaded').length
    const url = local.url
    const over = (reads?: LocalReads): EmbeddedObjectStore => {
      const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => apiKey, sessionToken: () => undefined },
        { objects: overHttp => new EmbeddedObjectStore(overHttp, local, () => apiKey, reads) })
      onTestFinished(async () => { await clients.close() })
      return clients.objects as EmbeddedObjectStore
    }
    const onThread = over({ block: async (c) => await local.readStoredBlock(c), run: async () => [], held: (key, cids) => local.heldFiles(key, cids) })
    expect([...await onThread.heldAmong(new Set([cid, other]))]).toEqual([cid])
    expect(listings()).toBe(0)
    expect([...await over().heldAmong(new Set([cid, other]))]).toEqual([cid])
    expect(listings()).toBe(1)
  })
})

describe('the embedded store: reads from the service\'s packs in this process (the service on this thread)', () => {
  it('reads the object\'s blocks without HTTP, checked against its CID, into the slabs', async () => {
    const bytes = randomBytes(20_000)
    const { local, cid } = await stored(bytes)
    const read: CID[] = []
    const store = client(local, async (block) => { read.push(block); return await local.readStoredBlock(block) })
    const slabs = await store.getBytes(cid, DEEP, { slab, maxBytes: 64 * 1024 })
    expect(joined(slabs).equals(bytes)).toBe(true)
    expect(slabs.length).toBe(5)
    // 20 leaves under a three-level DAG: every block read from the store, none over HTTP.
    expect(read.length).toBeGreaterThan(20)
    expect(fileFetches(local)).toBe(0)
  })

  it('reads its blocks into a few slots used again, call after call, each answer whole', async () => {
    const bytes = randomBytes(300_000)
    const { local, cid } = await stored(bytes)
    const slots = new Set<ArrayBufferLike>()
    let reads = 0
    const store = client(local, async (block, into) => {
      const got = await local.readStoredBlock(block, into)
      reads++
      if (into !== undefined && got?.buffer === into.buffer) slots.add(into.buffer)
      return got
    })
    const first = await store.getBytes(cid, DEEP, { slab, maxBytes: bytes.byteLength })
    const second = await store.getBytes(cid, DEEP, { slab, maxBytes: bytes.byteLength })
    expect(joined(first).equals(bytes)).toBe(true)
    expect(joined(second).equals(bytes)).toBe(true)
    // 600 leaves read, into at most the slots kept and those lent at once: not new memory a block.
    expect(reads).toBeGreaterThan(600)
    expect(slots.size).toBeGreaterThan(0)
    expect(slots.size).toBeLessThanOrEqual(16)
  })

  it('asks the gateway when a stored block is damaged, and takes its bytes only once they verify', async () => {
    const bytes = randomBytes(20_000)
    const { local, cid } = await stored(bytes)
    const damaged = damagedLeaves(local)
    expect(joined(await client(local, damaged).getBytes(cid, DEEP, { slab })).equals(bytes)).toBe(true)
    expect(fileFetches(local)).toBe(1)
    // The gateway's bytes damaged too: refused, as any gateway's that do not hash to the CID.
    local.faults.set('gateway', { bitflip: true })
    await expect(client(local, damaged).getBytes(cid, DEEP, { slab })).rejects.toThrow(IntegrityError)
  })

  it('a sealed read hashes no leaf (its caller opens each blob), yet checks every node above them', async () => {
    const bytes = randomBytes(20_000)
    const { local, cid } = await stored(bytes)
    let hashed = 0
    const hash = async (): Promise<string> => { hashed++; return cid }
    // The leaves come as stored: a damaged one is the caller's to find, by the blob's tags.
    const leaves = joined(await client(local, damagedLeaves(local)).getBytes(cid, DEEP, { slab, sealed: true, hash }))
    expect(leaves.equals(bytes)).toBe(false)
    expect(leaves.byteLength).toBe(bytes.byteLength)
    expect(hashed).toBe(0)
    expect(fileFetches(local)).toBe(0)
    // A damaged node would steer the walk elsewhere: refused, and the gateway's checked bytes taken.
    const damagedNodes: ReadStoredBlock = async (block) => {
      const got = await local.readStoredBlock(block)
      if (got === undefined || block.code === 0x55) return got
      const flipped = Buffer.from(got)
      flipped[flipped.byteLength - 1] = (flipped[flipped.byteLength - 1] as number) ^ 1
      return flipped
    }
    expect(joined(await client(local, damagedNodes).getBytes(cid, DEEP, { slab, sealed: true })).equals(bytes)).toBe(true)
    expect(fileFetches(local)).toBe(1)
    // Streamed alike: leaves as stored, a damaged node an IntegrityError.
    const streamed = async (read: ReadStoredBlock): Promise<Buffer> => {
      const chunks: Buffer[] = []
      for await (const chunk of (client(local, read).stream as NonNullable<ObjectStore['stream']>)(cid, { maxBytes: bytes.byteLength, sealed: true })) chunks.push(Buffer.from(chunk))
      return Buffer.concat(chunks)
    }
    expect((await streamed(damagedLeaves(local))).byteLength).toBe(bytes.byteLength)
    await expect(streamed(damagedNodes)).rejects.toThrow(IntegrityError)
  })

  it('hashes where the caller says when it gives a hash, and takes only bytes that hash to the CID', async () => {
    const bytes = randomBytes(300_000)
    const { local, cid } = await stored(bytes)
    const store = client(local, async (block, into) => await local.readStoredBlock(block, into))
    const asked: number[] = []
    const hash = async (slabs: readonly Uint8Array[]): Promise<string> => {
      asked.push(slabs.reduce((sum, s) => sum + s.byteLength, 0))
      const builder = new CidBuilder(DEEP)
      for (const s of slabs) builder.update(s)
      return builder.finish().toString()
    }
    expect(joined(await store.getBytes(cid, DEEP, { slab, hash })).equals(bytes)).toBe(true)
    // Handed every byte at once, and no gateway asked.
    expect(asked).toEqual([bytes.byteLength])
    expect(fileFetches(local)).toBe(0)
    // Hashed as the slabs fill, when the caller can: each slab handed over once, in order.
    const handed: number[] = []
    const hashing = (): { update: (s: Uint8Array) => void, finish: () => Promise<string> } => {
      const builder = new CidBuilder(DEEP)
      return { update: (s) => { handed.push(s.byteLength); builder.update(s) }, finish: async () => builder.finish().toString() }
    }
    const small = (): Uint8Array => new Uint8Array(128 * 1024)
    expect(joined(await store.getBytes(cid, DEEP, { slab: small, hash, hashing })).equals(bytes)).toBe(true)
    expect(handed).toEqual([131072, 131072, 300_000 - 262144])
    expect(asked).toEqual([bytes.byteLength])
    // A hash that answers another CID: the store's bytes are refused, then the gateway's too.
    await expect(store.getBytes(cid, DEEP, { slab, hash: async () => 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy' })).rejects.toThrow(IntegrityError)
  })

  it('asks the gateway for what the store does not hold, and for more bytes than the caller accepts', async () => {
    const bytes = randomBytes(20_000)
    const { local, cid } = await stored(bytes)
    expect(joined(await client(local, async () => undefined).getBytes(cid, DEEP, { slab })).equals(bytes)).toBe(true)
    expect(fileFetches(local)).toBe(1)
    await expect(client(local, async (block) => await local.readStoredBlock(block)).getBytes(cid, DEEP, { slab, maxBytes: 10_000 })).rejects.toThrow(/larger|more than|10000|10,000|exceed/i)
  })
  it('hashed on a sealing thread as the slabs fill: answers only the CID\'s bytes, and ends the thread\'s job on every failure', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 7)
    const { local, cid } = await stored(bytes, SNAPSHOT_PROFILE)
    const pool = new SealPool(1)
    onTestFinished(async () => { await pool.close() })
    const options = (signal?: AbortSignal): { slab: () => Uint8Array, hashing: () => ReturnType<SealPool['hashStream']>, hash: (s: readonly Uint8Array[]) => Promise<string>, signal?: AbortSignal } =>
      ({ slab, hashing: () => pool.hashStream(signal), hash: async (s) => await pool.hashObject(s, signal), ...(signal === undefined ? {} : { signal }) })
    // Wrong bytes from the packs, an object past maxBytes, an abort midway: the pool serves the next each time.
    // A pack whose leaves read otherwise, only from this process (the gateway reads them right): the gateway's bytes, the right ones.
    let lies = 0
    const lying: ReadStoredBlock = async (block, into) => {
      const got = await local.readStoredBlock(block, into)
      if (got === undefined || block.code !== 0x55) return got
      lies++
      const flipped = Buffer.from(got)
      flipped[flipped.length >> 1] = (flipped[flipped.length >> 1] as number) ^ 0x80
      return flipped
    }
    expect(joined(await client(local, lying).getBytes(cid, SNAPSHOT_PROFILE, options())).equals(bytes)).toBe(true)
    expect(lies).toBeGreaterThan(0)
    // Too large: refused here and by the gateway, in bounded time.
    await expect(client(local, async (b, i) => await local.readStoredBlock(b, i)).getBytes(cid, SNAPSHOT_PROFILE, { ...options(), maxBytes: 2 * 1024 * 1024 })).rejects.toThrow()
    // Aborted midway: refused, never hung.
    const ac = new AbortController()
    let reads = 0
    const slow: ReadStoredBlock = async (block, into) => {
      if (++reads === 2) ac.abort(new Error('stop'))
      return await local.readStoredBlock(block, into)
    }
    await expect(client(local, slow).getBytes(cid, SNAPSHOT_PROFILE, options(ac.signal))).rejects.toThrow()
    // The thread is free: the next object hashes at once, and the pool closes.
    const again = await client(local, async (b, i) => await local.readStoredBlock(b, i)).getBytes(cid, SNAPSHOT_PROFILE, options())
    expect(joined(again).equals(bytes)).toBe(true)
    const closing = Date.now()
    await pool.close()
    expect(Date.now() - closing).toBeLessThan(5_000)
  }, 60_000)
})

describe('fetching into a reader or a file from the service\'s own store (a restore\'s segments)', () => {
  /** A reader that collects what it is handed; `fail` makes it give up after that many bytes. */
  const collector = (fail?: number): { read: (bytes: import('node:stream').Readable) => Promise<void>, got: () => Buffer } => {
    let chunks: Buffer[] = []
    return {
      got: () => Buffer.concat(chunks),
      read: async (stream) => {
        chunks = []
        let seen = 0
        for await (const chunk of stream) {
          chunks.push(chunk as Buffer)
          seen += (chunk as Buffer).byteLength
          if (fail !== undefined && seen >= fail) throw new Error('the reader gave up')
        }
      }
    }
  }

  it('streams the object from the store without HTTP, checked against its CID; to a file too', async () => {
    const bytes = randomBytes(20_000)
    const { local, cid } = await stored(bytes)
    const reader = collector()
    const store = client(local, async (block) => await local.readStoredBlock(block))
    expect(await store.getInto(cid, DEEP, reader.read)).toEqual({ size: bytes.byteLength, from: 'the service\'s store' })
    expect(reader.got().equals(bytes)).toBe(true)
    const file = join(await useTempDir(), 'out.bin')
    await store.getFile(cid, DEEP, file)
    expect((await readFile(file)).equals(bytes)).toBe(true)
    expect(fileFetches(local)).toBe(0)
  })

  it('a damaged stored block, or one not stored: the gateway is asked, and its bytes handed over once more from the start', async () => {
    const bytes = randomBytes(20_000)
    const { local, cid } = await stored(bytes)
    const damaged = damagedLeaves(local)
    const reader = collector()
    expect(await client(local, damaged).getInto(cid, DEEP, reader.read)).toMatchObject({ size: bytes.byteLength, from: local.url.replace(/\/$/, '') })
    expect(reader.got().equals(bytes)).toBe(true)
    expect(await client(local, async () => undefined).getInto(cid, DEEP, reader.read)).toMatchObject({ size: bytes.byteLength })
    expect(fileFetches(local)).toBe(2)
    // More than the caller accepts from the store: not that object; the gateway's answer is refused alike.
    await expect(client(local, async (block) => await local.readStoredBlock(block)).getInto(cid, DEEP, collector().read, { maxBytes: 10_000 })).rejects.toThrow()
  })

  it('a reader that fails over the store\'s verified bytes fails the fetch with its own error; no gateway is asked', async () => {
    const bytes = randomBytes(20_000)
    const { local, cid } = await stored(bytes)
    await expect(client(local, async (block) => await local.readStoredBlock(block)).getInto(cid, DEEP, collector(5_000).read)).rejects.toThrow('the reader gave up')
    expect(fileFetches(local)).toBe(0)
  })
})

describe('a store whose data dir lost what it indexed', () => {
  it('is named (ERR_SERVICE_DATA_DAMAGED), not asked again over HTTP, whose answer could only be a 500', async () => {
    const bytes = randomBytes(20_000)
    const { local, cid } = await stored(bytes)
    const lost: ReadStoredBlock = async () => { throw new ServiceDataDamagedError('pack 1 is shorter than its index says (block x)') }
    await expect(client(local, lost).getInto(cid, DEEP, async (stream) => { for await (const _ of stream) { /* drained */ } })).rejects.toMatchObject({ code: 'ERR_SERVICE_DATA_DAMAGED' })
    await expect(client(local, lost).getFile(cid, DEEP, join(await useTempDir(), 'out.bin'))).rejects.toMatchObject({ code: 'ERR_SERVICE_DATA_DAMAGED' })
    await expect(client(local, lost).getBytes(cid, DEEP, { slab })).rejects.toMatchObject({ code: 'ERR_SERVICE_DATA_DAMAGED' })
    expect(fileFetches(local)).toBe(0)
  })
})

describe('the embedded store: getBytes calls at once share its block slots', () => {
  it('never mixes the bytes of calls at once, of aborted ones, or of blocks larger than the slots', async () => {
    const { dir, local, clients } = await account()
    const profileOf = (i: number): CidProfile => i === 5 ? { ...DEEP, chunkSize: 300_000 } : DEEP
    const objects: Array<{ bytes: Buffer, cid: string }> = []
    for (let i = 0; i < 6; i++) {
      // One of them with big leaves: larger than the first slots, so slots grow mid-run.
      const profile = profileOf(i)
      const bytes = i === 4 ? Buffer.alloc(200_000, 7) : randomBytes(150_000 + i * 1000)
      await writeFile(join(dir, `in${i}.bin`), bytes)
      objects.push({ bytes, cid: (await clients.objects.put(join(dir, `in${i}.bin`), profile)).cid })
    }
    // Reads that end in any order, as a busy disk's would.
    const read: ReadStoredBlock = async (cid, into) => {
      await new Promise(r => setTimeout(r, Math.random() * 2))
      const got = await local.readStoredBlock(cid, into)
      await new Promise(r => setTimeout(r, Math.random() * 2))
      return got
    }
    const http = new HttpClient({ service: 'gateway', baseUrl: local.url, retry: { attempts: 1 } })
    onTestFinished(async () => { await http.close() })
    const overHttp = new ServiceObjectStore(new UploadClient(http), new GatewayClient([http]), http, 'svc')
    const store = new EmbeddedObjectStore(overHttp, local, () => undefined, { block: read, run: async (cids) => await Promise.all(cids.map(async c => await read(c))) })
        for (let round = 0; round < 4; round++) {
      const calls = objects.flatMap((o, i) => [0, 1].map(async (k) => {
        const abort = new AbortController()
        if (k === 1) setTimeout(() => { abort.abort() }, Math.random() * 20)
        try {
          const got = await store.getBytes(o.cid, profileOf(i), { slab, maxBytes: o.bytes.byteLength, signal: abort.signal })
          expect(joined(got).equals(o.bytes), `object ${i} round ${round}`).toBe(true)
        } catch (err) {
          if (k !== 1) throw err
        }
      }))
      await Promise.all(calls)
    }
    // A mixed block would fail the hash and fall back to the gateway silently: none may.
    expect(local.requestLog().filter(r => r.route === 'gateway').length).toBe(0)
  }, 120_000)
})
