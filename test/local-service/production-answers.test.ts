import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { request } from 'undici'
import { bytesCid, cidProfile } from '../../src/content/index.js'
import { NameNotFoundError } from '../../src/errors.js'
import { EXTERNAL, serviceUnderTest, type ServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

const CID = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'
const FAILURE = { error: [{ message: 'Something went wrong.' }] }

/** A raw request, to see the status and body exactly as a client would receive them. */
async function raw (service: ServiceUnderTest, path: string, init: { method?: 'GET' | 'POST' | 'DELETE', auth?: string | null, body?: string, contentType?: string } = {}): Promise<{ status: number, body: unknown, text: string }> {
  const headers: Record<string, string> = {}
  if (init.auth !== null) headers.authorization = init.auth ?? `Bearer ${service.apiKey}`
  if (init.contentType !== undefined) headers['content-type'] = init.contentType
  const answer = await request(`${service.baseUrls.api}${path}`, { method: init.method ?? 'GET', headers, body: init.body })
  const text = await answer.body.text()
  let body: unknown
  try { body = JSON.parse(text) } catch { body = undefined }
  return { status: answer.statusCode, body, text }
}

function multipart (files: Array<{ name: string, bytes: string, field?: string }>): { body: string, contentType: string } {
  const boundary = 'test-boundary-7c1f'
  const parts = files.map(f => `--${boundary}\r\nContent-Disposition: form-data; name="${f.field ?? 'file'}"; filename="${f.name}"\r\nContent-Type: application/octet-stream\r\n\r\n${f.bytes}\r\n`)
  return { body: `${parts.join('')}--${boundary}--\r\n`, contentType: `multipart/form-data; boundary=${boundary}` }
}

describe('the local service answers as production does', () => {
  it('names deal fields as production does now, and the older way under a fault', async () => {
    const service = await serviceUnderTest()
    const { clients, local } = service
    const dir = await useTempDir()
    await writeFile(join(dir, 'd.txt'), 'deal fields')
    const { cid } = await clients.objects.put(join(dir, 'd.txt'), cidProfile('kubo-cidv1'))
    await clients.deals.addCid(cid)
    const current = await until(async () => {
      const answer = await raw(service, `/api/lighthouse/deal_status?cid=${cid}`)
      return (answer.body as unknown[]).length > 0 ? (answer.body as Array<Record<string, unknown>>)[0] : undefined
    }, 5_000, 'the deal')
    expect(Object.keys(current ?? {})).toEqual(expect.arrayContaining(['DealID', 'Provider', 'pieceCID', 'aggregateIn', 'startEpoch', 'endEpoch']))
    expect(current).not.toHaveProperty('dealId')
    const viaCurrent = await clients.deals.dealStatus(cid)
    local?.faults.set('deal_status', { legacyDealFields: true })
    const older = (await raw(service, `/api/lighthouse/deal_status?cid=${cid}`)).body as Array<Record<string, unknown>>
    expect(Object.keys(older[0] ?? {})).toEqual(expect.arrayContaining(['dealId', 'miner', 'storageProvider']))
    expect(older[0]).not.toHaveProperty('DealID')
    const viaOlder = await clients.deals.dealStatus(cid)
    expect(viaOlder[0]).toMatchObject({ dealId: viaCurrent[0]?.dealId, provider: viaCurrent[0]?.provider, status: 'Active' })
  })

  it.skipIf(EXTERNAL)('answers deal status to anyone without a key, as production does, and a key\'s own deals with one', async () => {
    const owner = await serviceUnderTest({ dealDelayMs: 0 })
    const dir = await useTempDir()
    await writeFile(join(dir, 'd.txt'), 'whose deal')
    const { cid } = await owner.clients.objects.put(join(dir, 'd.txt'), cidProfile('kubo-cidv1'))
    await owner.clients.deals.addCid(cid)
    expect((await owner.clients.deals.dealStatus(cid)).length).toBe(1)
    // Another account with its key asks about its own request: it made none.
    const { newWalletKey } = await import('../../src/crypto/index.js')
    const { apiKey } = await owner.clients.deals.login(newWalletKey())
    expect(await raw(owner, `/api/lighthouse/deal_status?cid=${cid}`, { auth: `Bearer ${apiKey}` })).toMatchObject({ status: 200, body: [] })
    // Without a key, as the storage service's SDK asks: every deal made for the CID, naming no account.
    const open = await raw(owner, `/api/lighthouse/deal_status?cid=${cid}`, { auth: null })
    expect(open).toMatchObject({ status: 200, body: [{ dealStatus: 'Active' }] })
    expect(open.text).not.toContain(owner.address)
    expect((await raw(owner, `/api/lighthouse/deal_status?cid=${cid}`, { auth: 'Bearer not-a-key' })).status).toBe(401)
  })

  it('answers IPNS failures with 500 and "Something went wrong.", and the client says what was wrong at once', async () => {
    const service = await serviceUnderTest()
    const unknown = 'f'.repeat(32)
    expect(await raw(service, `/api/ipns/publish_record?cid=${CID}&keyName=${unknown}`)).toMatchObject({ status: 500, body: FAILURE })
    const key = await service.clients.names.create()
    expect(await raw(service, `/api/ipns/publish_record?cid=notacid&keyName=${key.ipnsName}`)).toMatchObject({ status: 500, body: FAILURE })
    expect(await raw(service, `/api/ipns/remove_key?keyName=${unknown}`, { method: 'DELETE' })).toMatchObject({ status: 500, body: FAILURE })

    await expect(service.clients.names.publish(unknown, CID)).rejects.toThrow(NameNotFoundError)
    await expect(service.clients.names.remove(unknown)).rejects.toThrow(`the account has no IPNS key named ${unknown}`)
    const tries = service.local?.requestLog().filter(r => r.route === 'publish_record' || r.route === 'remove_key').map(r => r.status)
    expect(tries).toEqual([500, 500, 500, 500, 500])
  })

  it('answers an unknown lastKey with 200', async () => {
    const service = await serviceUnderTest()
    expect(await raw(service, '/api/user/files_uploaded?lastKey=no-such-record')).toMatchObject({ status: 200, body: { fileList: [], totalFiles: 0 } })
  })

  it('words a 401 as production does, and takes the Bearer scheme in any case', async () => {
    const service = await serviceUnderTest()
    expect(await raw(service, '/api/ipns/get_ipns_records', { auth: null })).toMatchObject({ status: 401, body: { error: 'Authentication failed' } })
    expect(await raw(service, '/api/ipns/get_ipns_records', { auth: 'Bearer not-a-key' })).toMatchObject({ status: 401, body: { error: 'Authentication failed' } })
    expect(await raw(service, '/v1/pointers/current?namespace=a&network=b', { auth: 'Bearer x.y.z' })).toMatchObject({ status: 401, body: { error: 'Unauthorized' } })
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      expect(await raw(service, '/api/ipns/get_ipns_records', { auth: `${scheme} ${service.apiKey}` })).toMatchObject({ status: 200, body: [] })
    }
  })

  it('adds every part of a multipart body, one NDJSON line a file, and lists each', async () => {
    const service = await serviceUnderTest()
    const { body, contentType } = multipart([{ name: 'one.txt', bytes: 'first file' }, { name: 'two.txt', bytes: 'second file' }])
    const answer = await raw(service, '/api/v0/add?cid-version=1&raw-leaves=true&chunker=size-262144&wrap-with-directory=false', { method: 'POST', body, contentType })
    expect(answer.status).toBe(200)
    const lines = answer.text.trim().split('\n').map(l => JSON.parse(l) as { Name: string, Hash: string })
    const expected = ['first file', 'second file'].map(t => bytesCid(Buffer.from(t), cidProfile('kubo-cidv1')).toString())
    expect(lines.map(l => [l.Name, l.Hash])).toEqual([['one.txt', expected[0]], ['two.txt', expected[1]]])
    const listed = []
    for await (const r of service.clients.files()) listed.push(r.cid)
    expect(listed).toEqual(expect.arrayContaining(expected))
  })

  it('refuses, naming it, an add parameter it does not implement', async () => {
    const service = await serviceUnderTest()
    const { body, contentType } = multipart([{ name: 'a.txt', bytes: 'a' }])
    for (const [query, named] of [['hash=blake2b-256', 'hash=blake2b-256'], ['trickle=true', 'trickle=true'], ['cid-version=0&raw-leaves=true', 'raw-leaves=true with cid-version=0'], ['inline=true', 'inline=true'], ['frobnicate=1', 'parameter frobnicate']]) {
      const answer = await raw(service, `/api/v0/add?${query}`, { method: 'POST', body, contentType })
      expect(answer.status, query).toBe(400)
      expect((answer.body as { error: string }).error).toContain(`${named} is not implemented`)
    }
    expect((await raw(service, '/api/v0/add?hash=sha2-256&trickle=false&cid-version=1', { method: 'POST', body, contentType })).status).toBe(200)
    // Any part name is taken, as Kubo takes it (kubo-rpc-client names them file-1, file-2...).
    expect(await raw(service, '/api/v0/add', { method: 'POST', ...multipart([{ name: 'a.txt', bytes: 'a', field: 'other' }]) })).toMatchObject({ status: 200, body: { Name: 'a.txt', Hash: bytesCid(Buffer.from('a'), cidProfile('unixfs-v0-2015')).toString() } })
    const field = 'Content-Disposition: form-data; name="note"\r\n\r\nhello\r\n'
    const withField = { body: `--test-boundary-7c1f\r\n${field}${body}`, contentType }
    expect(await raw(service, '/api/v0/add', { method: 'POST', ...withField })).toMatchObject({ status: 400, body: { error: expect.stringContaining('unexpected form field note') } })
  })
})
