import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { askDeals } from '../../src/exits/import-deals.js'
import type { Config } from '../../src/config/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const OBJECT = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

/** A service whose deal_status answers `listed` for every CID, and that counts the deals asked. */
async function service (listed: unknown): Promise<{ url: string, asked: string[] }> {
  const asked: string[] = []
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    res.setHeader('content-type', 'application/json')
    if (url.pathname === '/api/lighthouse/deal_status') { res.end(JSON.stringify(listed)); return }
    if (url.pathname === '/api/v1/pin/add_cid') { asked.push(url.searchParams.get('cid') ?? ''); res.end('{}'); return }
    res.statusCode = 404
    res.end('{}')
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { await new Promise(resolve => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked }
}

describe('import --car asking deals', () => {
  it.each([
    ['an empty record', [{}]],
    ['a failed request without a deal id', [{ dealStatus: 'Failed' }]],
    ['dealInfo records without a deal id', { dealInfo: [{ dealStatus: 'Queued', pieceCID: 'baga6ea4seaq' }] }]
  ])('asks a deal when the service lists %s: only a record naming a deal (its id, as reconcile counts it) is a deal made', async (_what, listed) => {
    const { url, asked } = await service(listed)
    const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => 'key', sessionToken: () => undefined }, { retry: { baseDelayMs: 10, maxDelayMs: 50, attempts: 1 } })
    onTestFinished(async () => { await clients.close() })
    const config = { stateDir: await useTempDir() } as unknown as Config
    const deals = await askDeals(clients, config, [OBJECT], undefined)
    expect(deals).toEqual({ asked: 1, skipped: 0 })
    expect(asked).toEqual([OBJECT])
  })

  it('skips an object the service lists a deal for', async () => {
    const { url, asked } = await service([{ DealID: 42, Provider: 'f01', dealStatus: 'Active' }])
    const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => 'key', sessionToken: () => undefined }, { retry: { baseDelayMs: 10, maxDelayMs: 50, attempts: 1 } })
    onTestFinished(async () => { await clients.close() })
    const config = { stateDir: await useTempDir() } as unknown as Config
    expect(await askDeals(clients, config, [OBJECT], undefined)).toEqual({ asked: 0, skipped: 1 })
    expect(asked).toEqual([])
  })
})
