import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { createServiceClients, GatewayClient, HttpClient, ServiceObjectStore, UploadClient } from '../../src/remote/index.js'
import { EmbeddedObjectStore } from '../../src/connect/index.js'
import type { ObjectStore, ReadStoredBlock } from '../../src/store/index.js'
import type { CidProfile } from '../../src/content/index.js'
import { SNAPSHOT_PROFILE } from '../../src/sync/read/index.js'
import { SealPool } from '../../src/custody/seal-pool.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

/**
 * Attack on getBytes hashed slab by slab on a sealing thread: wrong bytes from the packs, an
 * object past maxBytes, an abort midway. Bytes are answered only when they hash to the CID; the
 * thread's open job ends each time (the pool serves the next, and closes at once).
 */
// The profile the sealing threads hash under (a pack's).
const DEEP: CidProfile = SNAPSHOT_PROFILE

async function stored (bytes: Buffer): Promise<{ local: LocalService, cid: string }> {
  const dir = await useTempDir()
  const local = await startLocalService({ dir: join(dir, 'service') })
  onTestFinished(async () => { await local.stop() })
  let apiKey: string | undefined
  const clients = createServiceClients({ dealUrl: local.url, apiUrl: local.url, pointerUrl: local.url, uploadUrl: local.url, gateways: [local.url] }, { apiKey: () => apiKey, sessionToken: () => undefined })
  onTestFinished(async () => { await clients.close() })
  apiKey = (await clients.deals.login(newWalletKey())).apiKey
  await writeFile(join(dir, 'in.bin'), bytes)
  return { local, cid: (await clients.objects.put(join(dir, 'in.bin'), DEEP)).cid }
}

function client (local: LocalService, readStored: ReadStoredBlock): ObjectStore {
  const http = new HttpClient({ service: 'gateway', baseUrl: local.url, retry: { attempts: 1 } })
  onTestFinished(async () => { await http.close() })
  const overHttp = new ServiceObjectStore(new UploadClient(http), new GatewayClient([http]), http, 'the service under test')
  return new EmbeddedObjectStore(overHttp, local, () => undefined, { block: readStored, run: async (cids) => await Promise.all(cids.map(async cid => await readStored(cid))) })
}

const joined = (slabs: readonly Uint8Array[]): Buffer => Buffer.concat(slabs.map(s => Buffer.from(s.buffer, s.byteOffset, s.byteLength)))
const slab = (): Uint8Array => new Uint8Array(new SharedArrayBuffer(4096))

describe('getBytes hashed on a sealing thread as the slabs fill', () => {
  it('answers only the CID\'s bytes, and ends the thread\'s job on every failure', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 7)
    const { local, cid } = await stored(bytes)
    const pool = new SealPool(1)
    onTestFinished(async () => { await pool.close() })
    const options = (signal?: AbortSignal): { slab: () => Uint8Array, hashing: () => ReturnType<SealPool['hashStream']>, hash: (s: readonly Uint8Array[]) => Promise<string>, signal?: AbortSignal } =>
      ({ slab, hashing: () => pool.hashStream(signal), hash: async (s) => await pool.hashObject(s, signal), ...(signal === undefined ? {} : { signal }) })
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
    expect(joined(await client(local, lying).getBytes(cid, DEEP, options())).equals(bytes)).toBe(true)
    expect(lies).toBeGreaterThan(0)
    // Too large: refused here and by the gateway, in bounded time.
    await expect(client(local, async (b, i) => await local.readStoredBlock(b, i)).getBytes(cid, DEEP, { ...options(), maxBytes: 2 * 1024 * 1024 })).rejects.toThrow()
    // Aborted midway: refused, never hung.
    const ac = new AbortController()
    let reads = 0
    const slow: ReadStoredBlock = async (block, into) => {
      if (++reads === 2) ac.abort(new Error('stop'))
      return await local.readStoredBlock(block, into)
    }
    await expect(client(local, slow).getBytes(cid, DEEP, options(ac.signal))).rejects.toThrow()
    // The thread is free: the next object hashes at once, and the pool closes.
    const again = await client(local, async (b, i) => await local.readStoredBlock(b, i)).getBytes(cid, DEEP, options())
    expect(joined(again).equals(bytes)).toBe(true)
    const closing = Date.now()
    await pool.close()
    expect(Date.now() - closing).toBeLessThan(5_000)
  }, 60_000)
})
