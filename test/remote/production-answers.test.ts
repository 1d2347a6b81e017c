import { describe, it, expect, afterEach } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile, bytesCid } from '../../src/content/index.js'
import { newWalletKey, walletAddress } from '../../src/crypto/index.js'
import { InvalidCidError, NameNotFoundError, RemoteBadRequestError, RemoteListingError } from '../../src/errors.js'
import { createServiceClients, type ServiceClients } from '../../src/remote/index.js'
import { ScriptedServer } from '../helpers/scripted-server.js'
import { useTempDir } from '../helpers/temp-dir.js'

const CID = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const open: ServiceClients[] = []
afterEach(async () => { for (const c of open.splice(0)) await c.close() })

/** Every client pointed at one scripted server, as production would answer. */
async function against (...script: Parameters<ScriptedServer['answer']>): Promise<{ server: ScriptedServer, clients: ServiceClients }> {
  const server = await new ScriptedServer().listen()
  server.answer(...script)
  const url = server.url
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] },
    { apiKey: () => 'key', sessionToken: () => 'token' }, { retry: { baseDelayMs: 5, maxDelayMs: 20 } })
  open.push(clients)
  return { server, clients }
}

const record = (id: string, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ id, cid: CID, fileName: `${id}.bin`, mimeType: 'application/octet-stream', fileSizeInBytes: '5', publicKey: '0xabc', sentForDeal: 'no', encryption: false, createdAt: 1_700_000_000_000, lastUpdate: 1_700_000_000_000, ...extra })

async function all<T> (items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of items) out.push(item)
  return out
}

describe('the uploads listing as production answers it', () => {
  it('reads null in any optional field as absent', async () => {
    const nulls = { mimeType: null, fileName: null, sentForDeal: null, status: null, txHash: null, publicKey: null, createdAt: null, lastUpdate: null }
    const { clients } = await against({ status: 200, body: { fileList: [record('a', nulls), record('b')], totalFiles: 2 } })
    const [a, b] = await all(clients.files())
    expect(a).toMatchObject({ id: 'a', fileName: '', mimeType: '', publicKey: '', fileSizeInBytes: 5 })
    expect(a?.sentForDeal).toBeUndefined()
    expect(a?.createdAt).toBeUndefined()
    expect(b).toMatchObject({ id: 'b', sentForDeal: 'no', createdAt: 1_700_000_000_000 })
  })

  it('as objects: a time in seconds is no upload time, a size that is no byte count is 0', async () => {
    const other = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
    const third = 'bafkreiemxgchqnqvssyqodxdrbhgqu4ofaaxdvxvc4wqdaj7kcubtc4sxu'
    const { clients } = await against({ status: 200, body: { fileList: [
      record('a', { createdAt: 1_700_000_000, fileSizeInBytes: -5 }),
      record('b', { cid: other, fileSizeInBytes: 1.5 }),
      record('c', { cid: third, createdAt: '2026-11-20T10:00:00.000Z' })
    ], totalFiles: 3 } })
    const [a, b, c] = await all(clients.objects.list())
    // Read as ms, 1,700,000,000 is January 1970: every upload would be past a prune's margin.
    expect(a).toMatchObject({ cid: CID, size: 0 })
    expect(a?.storedAt).toBeUndefined()
    expect(b).toMatchObject({ cid: other, size: 0, storedAt: 1_700_000_000_000 })
    expect(c?.storedAt).toBe(Date.parse('2026-11-20T10:00:00.000Z'))
  })

  it('fails, saying how many of totalFiles it read, when the service ignores the cursor', async () => {
    const page = { status: 200, body: { fileList: [record('c'), record('b'), record('a')], totalFiles: 7 } }
    const { clients, server } = await against(page)
    const read: string[] = []
    const err = await (async () => { for await (const r of clients.files()) read.push(r.id) })().catch((e: unknown) => e)
    expect(read).toEqual(['c', 'b', 'a'])
    expect(err).toBeInstanceOf(RemoteListingError)
    expect((err as Error).message).toContain('the listing stopped after 3 of 7 files')
    expect(server.received[1]?.url).toContain('lastKey=a')
  })
})

describe('deal status as production answers it', () => {
  it('takes current names, older names, null fields, string numbers, ISO times and a dealInfo wrapper', async () => {
    const current = { DealID: '86312', Provider: 'f02620', chainDealID: '86312', pieceCID: 'baga6ea4seaq', aggregateIn: 'bafyagg', startEpoch: '3900000', endEpoch: 5455200, dealStatus: null, lastUpdate: '2026-11-20T10:00:00.000Z' }
    const older = { dealId: 1001, miner: 'f01234', dealStatus: 'Active', startEpoch: 10, endEpoch: 20, lastUpdate: 1_700_000_000_000, payloadCid: CID }
    const { clients } = await against({ status: 200, body: { dealInfo: [current, older] } }, { status: 200, body: { dealInfo: null } })
    const deals = await clients.deals.dealStatus(CID)
    expect(deals[0]).toMatchObject({ dealId: 86312, chainDealId: 86312, provider: 'f02620', pieceCid: 'baga6ea4seaq', aggregateIn: 'bafyagg', startEpoch: 3_900_000, endEpoch: 5_455_200, status: undefined, lastUpdate: Date.parse('2026-11-20T10:00:00.000Z') })
    // Epochs as times: Filecoin mainnet's genesis, 30 s an epoch.
    expect(deals[0]).toMatchObject({ startAt: '2024-05-10T02:00:00.000Z', endAt: '2025-11-01T02:00:00.000Z' })
    expect(deals[1]).toMatchObject({ dealId: 1001, provider: 'f01234', status: 'Active', startEpoch: 10, startAt: '2020-08-24T22:05:00.000Z' })
    expect(await clients.deals.dealStatus(CID)).toEqual([])
  })

  it('refuses a text that is not a CID before asking', async () => {
    const { clients, server } = await against({ status: 200, body: [] })
    await expect(clients.deals.dealStatus('notacid')).rejects.toThrow(InvalidCidError)
    await expect(clients.deals.addCid('notacid')).rejects.toThrow('notacid is not a valid CID')
    expect(server.received).toHaveLength(0)
  })
})

describe('names as production answers them', () => {
  it('reads a null cid as unbound', async () => {
    const { clients } = await against({ status: 200, body: [{ ipnsName: 'a'.repeat(32), ipnsId: 'k51x', publicKey: null, cid: null, lastUpdate: null }] })
    expect(await clients.names.list()).toEqual([{ ipnsName: 'a'.repeat(32), ipnsId: 'k51x', publicKey: '', cid: '', lastUpdate: undefined }])
  })

  it('says the key does not exist when "Something went wrong." comes back, without four retries', async () => {
    const failed = { status: 500, body: { error: [{ message: 'Something went wrong.' }] } }
    const { clients, server } = await against(failed, { status: 200, body: [] })
    await expect(clients.names.publish('b'.repeat(32), CID)).rejects.toThrow(NameNotFoundError)
    expect(server.received.map(r => r.url.split('?')[0])).toEqual(['/api/ipns/publish_record', '/api/ipns/get_ipns_records'])
  })

  it.each([400, 404])('says the key does not exist when removing it is answered %i', async (status) => {
    const { clients, server } = await against({ status, body: { error: { message: 'Something went wrong.' } } }, { status: 200, body: [] })
    await expect(clients.names.remove('d'.repeat(32))).rejects.toThrow(NameNotFoundError)
    expect(server.received.map(r => r.method)).toEqual(['DELETE', 'GET'])
  })

  it('retries as usual when the key exists and the service failed anyway', async () => {
    const key = { ipnsName: 'c'.repeat(32), ipnsId: 'k51c', publicKey: '0xabc', cid: '', lastUpdate: 1 }
    const { clients } = await against({ status: 500, body: { error: [{ message: 'Something went wrong.' }] } }, { status: 200, body: [key] },
      { status: 503 }, { status: 200, body: { Name: 'k51c', Value: `/ipfs/${CID}` } })
    expect(await clients.names.publish(key.ipnsName, CID)).toEqual({ ipnsId: 'k51c', value: `/ipfs/${CID}` })
  })
})

describe('uploads as production answers them', () => {
  it('accepts the add answer as a JSON array, the root last', async () => {
    const dir = await useTempDir()
    const bytes = Buffer.from('array answer')
    const path = join(dir, 'a.txt')
    await writeFile(path, bytes)
    const cid = bytesCid(bytes, cidProfile('kubo-cidv1')).toString()
    const { clients } = await against({ status: 200, body: [{ Name: 'a.txt', Hash: cid, Size: '12' }] })
    expect(await clients.objects.put(path, cidProfile('kubo-cidv1'))).toEqual({ cid, size: bytes.byteLength })
  })
})

describe('pointers as production answers them', () => {
  it('reads null optional fields as absent', async () => {
    const { clients } = await against({ status: 200, body: { pointer: { userId: null, pointerKey: null, snapshotCid: CID, engine: null, namespace: 'n', network: 'm', memories: null, updatedAt: null } } })
    expect(await clients.pointers.current('n', 'm')).toEqual({ userId: undefined, pointerKey: undefined, snapshotCid: CID, engine: '', namespace: 'n', network: 'm', memories: undefined, updatedAt: undefined })
  })
})

describe('refusals', () => {
  it('makes a 400 a usage error (exit 2) that says what the service said', async () => {
    const { clients } = await against({ status: 400, body: { error: 'namespace is too long' } })
    const err = await clients.pointers.put({ snapshotCid: CID, engine: 'e', namespace: 'n', network: 'm' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RemoteBadRequestError)
    expect(err).toMatchObject({ exitCode: 2, status: 400 })
    expect((err as Error).message).toContain('namespace is too long')
  })
})

describe('login', () => {
  it.each([429, 503])('rides out a %i from create_api_key', async (status) => {
    const message = 'Please prove you are the owner of this wallet by signing this message, nonce=1699843285334'
    const { clients, server } = await against({ status: 200, body: JSON.stringify(message) }, { status }, { status: 200, body: '"f0e1d2c3-0000-4000-8000-000000000000"' })
    const walletKey = newWalletKey()
    expect(await clients.deals.login(walletKey)).toEqual({ address: walletAddress(walletKey), apiKey: 'f0e1d2c3-0000-4000-8000-000000000000' })
    expect(server.received).toHaveLength(3)
  })
})
