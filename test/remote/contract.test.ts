import { describe, it, expect } from 'vitest'
import { writeFile, access, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile, bytesCid, CID_PROFILE_NAMES } from '../../src/content/index.js'
import { personalSign } from '../../src/crypto/index.js'
import { IntegrityError, InvalidCidError, PointerNotFoundError, RemoteStatusError, RemoteUnauthorizedError } from '../../src/errors.js'
import { GatewayClient, HttpClient } from '../../src/remote/index.js'
import { ScriptedServer } from '../helpers/scripted-server.js'
import { serviceUnderTest, localServiceUnderTest, EXTERNAL } from '../helpers/service.js'
import { chachaBytes } from '../helpers/chacha-stream.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'

const localOnly = it.skipIf(EXTERNAL)
const portOf = (url: string): number => Number(new URL(url).port)

async function fileWith (dir: string, name: string, bytes: Uint8Array): Promise<string> {
  const path = join(dir, name)
  await writeFile(path, bytes)
  return path
}

describe('the service, through its clients', () => {
  it.each(CID_PROFILE_NAMES)('uploads a file under %s and gets the CID computed locally', async (name) => {
    const { clients } = await serviceUnderTest()
    const dir = await useTempDir()
    const bytes = chachaBytes(`upload-${name}`, 3 * 1024 * 1024 + 7)
    const added = await clients.objects.put(await fileWith(dir, 'a.bin', bytes), cidProfile(name))
    expect(added).toEqual({ cid: bytesCid(bytes, cidProfile(name)).toString(), size: bytes.byteLength })
  })

  it('lists every upload across pages, newest first, with both first-page forms', async () => {
    const { clients, baseUrls, local, apiKey } = await serviceUnderTest()
    const dir = await useTempDir()
    const cids: string[] = []
    for (let i = 0; i < 8; i++) cids.push((await clients.objects.put(await fileWith(dir, `f${i}.txt`, Buffer.from(`file ${i}`)), cidProfile('kubo-cidv1'))).cid)
    const pages: number[] = []
    const listed = []
    for await (const record of clients.files({ onProgress: p => pages.push(p.pages) })) listed.push(record)
    // Newest first: the files just uploaded lead the listing (an account may hold older ones).
    expect(listed.slice(0, 8).map(r => r.cid)).toEqual([...cids].reverse())
    expect(listed[0]).toMatchObject({ fileName: 'f7.txt', fileSizeInBytes: 6 })
    expect(new Set(listed.map(r => r.id)).size).toBe(listed.length)
    if (local !== undefined) expect(pages.at(-1)).toBe(3)
    const api = new HttpClient({ service: 'main API', baseUrl: baseUrls.api, credential: () => apiKey })
    try {
      const absent = await (await api.send({ method: 'GET', path: '/api/user/files_uploaded' })).body.json()
      const nullText = await (await api.send({ method: 'GET', path: '/api/user/files_uploaded', query: { lastKey: 'null' } })).body.json()
      expect(absent).toEqual(nullText)
    } finally {
      await api.close()
    }
  })

  it('binds a name, rebinds it keeping its id, lists it, removes it', async () => {
    const { clients } = await serviceUnderTest()
    const key = await clients.names.create()
    expect(key.ipnsName).toMatch(/^[0-9a-f]{32}$/)
    expect(key.ipnsId).toMatch(/^k51/)
    const first = bytesCid(Buffer.from('first'), cidProfile('kubo-cidv1')).toString()
    const second = bytesCid(Buffer.from('second'), cidProfile('kubo-cidv1')).toString()
    expect(await clients.names.publish(key.ipnsName, first)).toEqual({ ipnsId: key.ipnsId, value: `/ipfs/${first}` })
    expect(await clients.names.publish(key.ipnsName, second)).toEqual({ ipnsId: key.ipnsId, value: `/ipfs/${second}` })
    expect((await clients.names.list()).find(r => r.ipnsName === key.ipnsName)).toMatchObject({ ipnsId: key.ipnsId, cid: second })
    expect(await clients.names.remove(key.ipnsName)).toEqual([{ name: key.ipnsName, id: key.ipnsId }])
    expect((await clients.names.list()).find(r => r.ipnsName === key.ipnsName)).toBeUndefined()
  })

  it('stores a pointer, overwrites it, and says when there is none', async () => {
    const { clients } = await serviceUnderTest()
    const namespace = `test-${Date.now()}`
    await expect(clients.pointers.current(namespace, 'mainnet')).rejects.toThrow(PointerNotFoundError)
    await expect(clients.pointers.current(namespace, 'mainnet')).rejects.toThrow(`nothing stored for namespace ${namespace} on network mainnet`)
    const a = bytesCid(Buffer.from('a'), cidProfile('kubo-cidv1')).toString()
    const b = bytesCid(Buffer.from('b'), cidProfile('kubo-cidv1')).toString()
    await clients.pointers.put({ snapshotCid: a, engine: 'cidsync-sqlite/1', namespace, network: 'mainnet', memories: 3 })
    expect(await clients.pointers.current(namespace, 'mainnet')).toMatchObject({ snapshotCid: a, engine: 'cidsync-sqlite/1', memories: 3, pointerKey: `${namespace}#mainnet` })
    await clients.pointers.put({ snapshotCid: b, engine: 'cidsync-sqlite/1', namespace, network: 'mainnet', memories: 4 })
    expect(await clients.pointers.current(namespace, 'mainnet')).toMatchObject({ snapshotCid: b, memories: 4 })
    await expect(clients.pointers.current(namespace, 'calibration')).rejects.toThrow(PointerNotFoundError)
  })

  it('asks for a deal and marks the upload sent for deal', async () => {
    const { clients } = await serviceUnderTest()
    const dir = await useTempDir()
    const { cid } = await clients.objects.put(await fileWith(dir, 'deal.bin', Buffer.from('deal me')), cidProfile('kubo-cidv1'))
    await clients.deals.addCid(cid)
    let found
    for await (const record of clients.files()) if (record.cid === cid) found = record
    expect(found).toMatchObject({ sentForDeal: 'yes' })
  })

  // A real deal takes up to two days: only the local service makes one in time for a test.
  localOnly('shows the deal asked for in deal status once it is made', async () => {
    const { clients } = await localServiceUnderTest()
    const dir = await useTempDir()
    const { cid } = await clients.objects.put(await fileWith(dir, 'deal.bin', Buffer.from('deal me')), cidProfile('kubo-cidv1'))
    await clients.deals.addCid(cid)
    const deals = await until(async () => { const d = await clients.deals.dealStatus(cid); return d.length > 0 ? d : undefined }, 5_000, 'the deal')
    expect(deals[0]).toMatchObject({ status: 'Active', provider: expect.any(String), dealId: expect.any(Number) })
    // Its start epoch is now on mainnet's chain, as production's would be: the time it says is today.
    expect(Math.abs(Date.parse(deals[0]?.startAt ?? '') - Date.now())).toBeLessThan(10 * 60_000)
  })

  it('refuses a malformed CID with a 400, not retried; the client does not even send one', async () => {
    const { clients, local, baseUrls, apiKey } = await serviceUnderTest()
    await expect(clients.deals.addCid('not-a-cid')).rejects.toThrow(InvalidCidError)
    const deal = new HttpClient({ service: 'deal service', baseUrl: baseUrls.deal, credential: () => apiKey })
    try {
      const err = await deal.send({ method: 'GET', path: '/api/v1/pin/add_cid', query: { cid: 'not-a-cid' } }).catch((e: unknown) => e) as RemoteStatusError
      expect(err).toBeInstanceOf(RemoteStatusError)
      expect(err).toMatchObject({ status: 400, exitCode: 2 })
    } finally {
      await deal.close()
    }
    if (local !== undefined) expect(local.requestLog().filter(r => r.route === 'add_cid')).toHaveLength(1)
  })

  it('refuses a request without a valid API key', async () => {
    const { baseUrls } = await serviceUnderTest()
    const api = new HttpClient({ service: 'main API', baseUrl: baseUrls.api, credential: () => 'not-a-key', unauthorizedHint: 'run `cidsync login`' })
    await expect(api.send({ method: 'GET', path: '/api/ipns/get_ipns_records' })).rejects.toThrow(RemoteUnauthorizedError)
    await api.close()
  })

  it('fetches through the gateway and verifies the bytes', async () => {
    const { clients } = await serviceUnderTest()
    const dir = await useTempDir()
    const bytes = chachaBytes('gateway', 600_000)
    const { cid } = await clients.objects.put(await fileWith(dir, 'g.bin', bytes), cidProfile('kubo-cidv1'))
    const out = join(dir, 'fetched.bin')
    expect(await clients.objects.getFile(cid, cidProfile('kubo-cidv1'), out)).toMatchObject({ size: 600_000 })
    expect(Buffer.compare(await readFile(out), bytes)).toBe(0)
  })
})

describe('the local service', () => {
  localOnly('refuses a bad signature and a reused message', async () => {
    const { clients, walletKey, address } = await serviceUnderTest()
    const message = await clients.deals.authMessage(address)
    expect(message).toMatch(/^Please prove you are the owner of this wallet by signing this message, nonce=\d{13}/)
    const wrong = personalSign(`${message} (altered)`, walletKey)
    await expect(clients.deals.createApiKey(address, wrong)).rejects.toMatchObject({ status: 401 })
    const right = personalSign(message, walletKey)
    expect(await clients.deals.createApiKey(address, right)).toMatch(/^[0-9a-f-]{36}$/)
    await expect(clients.deals.createApiKey(address, right)).rejects.toMatchObject({ status: 401 })
  })

  localOnly('waits out a 429 with Retry-After, retries a 500, and answers the first page with lastKey absent or null', async () => {
    const { clients, local } = await localServiceUnderTest()
    local.faults.set('files_uploaded', { errorRate: 1, status: 429, retryAfterSeconds: 1, times: 1 })
    const started = Date.now()
    for await (const _ of clients.files()) { /* empty listing */ }
    expect(Date.now() - started).toBeGreaterThanOrEqual(950)
    local.faults.set('get_ipns_records', { errorRate: 1, status: 500, times: 2 })
    expect(await clients.names.list()).toEqual([])
    expect(local.requestLog().filter(r => r.route === 'get_ipns_records').map(r => r.status)).toEqual([500, 500, 200])
  })

  localOnly('refuses corrupted gateway bytes, and falls back to the next gateway', async () => {
    const { clients, local } = await localServiceUnderTest()
    const dir = await useTempDir()
    const bytes = chachaBytes('corrupt', 300_000)
    const { cid } = await clients.objects.put(await fileWith(dir, 'c.bin', bytes), cidProfile('kubo-cidv1'))
    const out = join(dir, 'out.bin')
    for (const fault of [{ bitflip: true }, { truncate: true }]) {
      local.faults.set('gateway', fault)
      await expect(clients.objects.getFile(cid, cidProfile('kubo-cidv1'), out)).rejects.toThrow(IntegrityError)
      await expect(access(out)).rejects.toThrow()
    }
    local.faults.clear()
    const liar = await new ScriptedServer().listen()
    liar.answer({ status: 200, body: 'not the bytes you asked for' })
    const gateways = [new HttpClient({ service: 'gateway', baseUrl: liar.url }), new HttpClient({ service: 'gateway', baseUrl: local.url })]
    try {
      expect(await new GatewayClient(gateways).fetchVerified(cid, cidProfile('kubo-cidv1'), out)).toMatchObject({ size: 300_000, gateway: local.url })
    } finally {
      for (const g of gateways) await g.close()
    }
  })

  localOnly('serves one block for ?format=raw, the DAG for ?format=car, and names under /ipns/', async () => {
    const { clients, local } = await localServiceUnderTest()
    const dir = await useTempDir()
    const { cid } = await clients.objects.put(await fileWith(dir, 'r.txt', Buffer.from('raw block')), cidProfile('kubo-cidv1'))
    const port = portOf(local.url)
    expect(await httpGet({ port }, `/ipfs/${cid}?format=raw`)).toMatchObject({ status: 200, body: 'raw block' })
    const car = await httpGet({ port }, `/ipfs/${cid}?format=car`)
    expect(car.headers['content-type']).toContain('application/vnd.ipld.car')
    expect(await httpGet({ port }, '/ipfs/not-a-cid')).toMatchObject({ status: 400 })
    const key = await clients.names.create()
    await clients.names.publish(key.ipnsName, cid)
    expect((await clients.gateway.fetchName(key.ipnsId)).toString()).toBe('raw block')
    expect(await httpGet({ port }, '/api/ipns/generate_key', { method: 'POST' })).toMatchObject({ status: 405 })
    expect(await httpGet({ port }, '/nowhere')).toMatchObject({ status: 404 })
  })

  localOnly('expires auth messages', async () => {
    // The service's clock, moved on past the message's lifetime instead of waiting it out.
    let skew = 0
    const { clients, walletKey, address } = await serviceUnderTest({ authMessageTtlMs: 2000, now: () => Date.now() + skew })
    const message = await clients.deals.authMessage(address)
    skew = 2001
    await expect(clients.deals.createApiKey(address, personalSign(message, walletKey))).rejects.toMatchObject({ status: 401 })
  })

  localOnly('cuts connections and delays answers on request, and the clients ride it out', async () => {
    const { clients, local } = await localServiceUnderTest()
    local.faults.set('get_ipns_records', { resetRate: 1, times: 1 })
    expect(await clients.names.list()).toEqual([])
    local.faults.set('get_ipns_records', { latencyMs: 300, times: 1 })
    const started = Date.now()
    expect(await clients.names.list()).toEqual([])
    expect(Date.now() - started).toBeGreaterThanOrEqual(280)
  })
})
