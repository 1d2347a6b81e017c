import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startLocalService } from '../../src/local-service/index.js'
import { createServiceClients, GatewayClient, HttpClient } from '../../src/remote/index.js'
import { cidProfile, type CidProfile } from '../../src/content/index.js'
import { IntegrityError } from '../../src/errors.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** Small leaves and narrow nodes: a 20 KB file is a DAG three levels deep. */
const DEEP: CidProfile = { ...cidProfile('kubo-cidv1'), chunkSize: 1000, maxLinks: 4 }

/**
 * A gateway in front of the local service that serves trustless formats only, as a strict
 * trustless gateway does: a whole file is a 406, a raw block is passed through (`lie` may change it).
 */
async function trustlessOnly (upstream: string, lie?: (block: Buffer, url: string) => Buffer): Promise<{ url: string, asked: string[] }> {
  const asked: string[] = []
  const server = createServer((req, res) => {
    const url = req.url ?? '/'
    asked.push(url)
    if (!new URL(url, 'http://x').searchParams.has('format')) {
      res.writeHead(406, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: 'only trustless responses: ask format=raw or format=car' }))
      return
    }
    void (async () => {
      const answer = await fetch(new URL(url, upstream), { headers: { accept: req.headers.accept ?? '' } })
      const block = Buffer.from(await answer.arrayBuffer())
      const sent = lie === undefined ? block : lie(block, url)
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? '', 'content-length': String(sent.byteLength) })
      res.end(sent)
    })().catch(() => { res.destroy() })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { await new Promise(resolve => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked }
}

async function uploaded (bytes: Buffer): Promise<{ upstream: string, cid: string, dir: string }> {
  const dir = await useTempDir()
  const local = await startLocalService({ dir: join(dir, 'service') })
  onTestFinished(async () => { await local.stop() })
  let apiKey: string | undefined
  const clients = createServiceClients({ dealUrl: local.url, apiUrl: local.url, pointerUrl: local.url, uploadUrl: local.url, gateways: [local.url] }, { apiKey: () => apiKey, sessionToken: () => undefined })
  onTestFinished(async () => { await clients.close() })
  apiKey = (await clients.deals.login(newWalletKey())).apiKey
  await writeFile(join(dir, 'in.bin'), bytes)
  return { upstream: local.url, cid: (await clients.objects.put(join(dir, 'in.bin'), DEEP)).cid, dir }
}

function gatewayClient (url: string): GatewayClient {
  const http = new HttpClient({ service: 'gateway', baseUrl: url, retry: { attempts: 1 } })
  onTestFinished(async () => { await http.close() })
  return new GatewayClient([http])
}

describe('the gateway client against a gateway that serves only trustless formats', () => {
  it('puts the file together from raw blocks, each checked against its CID', async () => {
    const bytes = randomBytes(20_000)
    const { upstream, cid, dir } = await uploaded(bytes)
    const gateway = await trustlessOnly(upstream)
    const out = join(dir, 'out.bin')
    expect(await gatewayClient(gateway.url).fetchVerified(cid, DEEP, out)).toMatchObject({ size: 20_000, gateway: gateway.url })
    expect((await readFile(out)).equals(bytes)).toBe(true)
    expect(gateway.asked[0]).toBe(`/ipfs/${cid}`)
    // 20 leaves, 5 nodes above them, 2 above those, the root: each block asked for once.
    expect(gateway.asked.slice(1).every(u => u.endsWith('?format=raw'))).toBe(true)
    expect(gateway.asked.length).toBe(1 + 20 + 5 + 2 + 1)
  })

  it('refuses a block that does not hash to its CID, and writes nothing', async () => {
    const { upstream, cid, dir } = await uploaded(randomBytes(20_000))
    let lied = 0
    const gateway = await trustlessOnly(upstream, (block, url) => {
      if (lied > 0 || url.startsWith(`/ipfs/${cid}`)) return block
      lied++
      const bad = Buffer.from(block)
      bad[0] = (bad[0] as number) ^ 0x01
      return bad
    })
    await expect(gatewayClient(gateway.url).fetchVerified(cid, DEEP, join(dir, 'out.bin'))).rejects.toThrow(IntegrityError)
    expect(lied).toBe(1)
    expect((await readdir(dir)).filter(f => f.startsWith('out.bin'))).toEqual([])
  })
})
