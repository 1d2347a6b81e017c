import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { startLocalService } from '../../src/local-service/index.js'
import { createServiceClients, GatewayClient, HttpClient } from '../../src/remote/index.js'
import { cidProfile } from '../../src/content/index.js'
import { IntegrityError } from '../../src/errors.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const PROFILE = cidProfile('kubo-cidv1')

async function uploaded (bytes: Buffer): Promise<{ upstream: string, cid: string, dir: string }> {
  const dir = await useTempDir()
  const local = await startLocalService({ dir: join(dir, 'service') })
  onTestFinished(async () => { await local.stop() })
  let apiKey: string | undefined
  const clients = createServiceClients({ dealUrl: local.url, apiUrl: local.url, pointerUrl: local.url, uploadUrl: local.url, gateways: [local.url] }, { apiKey: () => apiKey, sessionToken: () => undefined })
  onTestFinished(async () => { await clients.close() })
  apiKey = (await clients.deals.login(newWalletKey())).apiKey
  await writeFile(join(dir, 'in.bin'), bytes)
  return { upstream: local.url, cid: (await clients.objects.put(join(dir, 'in.bin'), PROFILE)).cid, dir }
}

/** A gateway answering every GET with `bytes` (another object's, for one that lies), counting what it was asked. */
async function serving (bytes: Buffer): Promise<{ url: string, asked: () => number }> {
  let asked = 0
  const server = createServer((_req, res) => {
    asked++
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) })
    res.end(bytes)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { await new Promise(resolve => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked: () => asked }
}

function gateways (...urls: string[]): GatewayClient {
  return new GatewayClient(urls.map(url => {
    const http = new HttpClient({ service: 'gateway', baseUrl: url, retry: { attempts: 1 } })
    onTestFinished(async () => { await http.close() })
    return http
  }))
}

/** A reader that keeps every byte, slowly (the fetch must wait for it), and may fail once it has read `failAfter` bytes. */
function collector (failAfter?: number): { read: (bytes: Readable) => Promise<void>, runs: Buffer[] } {
  const runs: Buffer[] = []
  return {
    runs,
    read: async (bytes) => {
      const got: Buffer[] = []
      let total = 0
      for await (const chunk of bytes) {
        got.push(chunk as Buffer)
        total += (chunk as Buffer).byteLength
        await sleep(1)
        if (failAfter !== undefined && total >= failAfter) throw new Error('the reader gave up')
      }
      runs.push(Buffer.concat(got))
    }
  }
}

describe('a fetch that hands its bytes to a reader as they arrive (a segment inflated while it is fetched)', () => {
  it('hands every byte on, at the reader\'s pace, and answers once both the file is verified and the reader done', async () => {
    const bytes = randomBytes(3 * 1024 * 1024)
    const { upstream, cid, dir } = await uploaded(bytes)
    const reader = collector()
    expect(await gateways(upstream).fetchVerifiedInto(cid, PROFILE, reader.read)).toMatchObject({ size: bytes.byteLength, gateway: upstream })
    expect(reader.runs.length).toBe(1)
    expect((reader.runs[0] as Buffer).equals(bytes)).toBe(true)
    // No copy of the bytes is kept: the reader had them.
    expect((await readdir(dir)).sort()).toEqual(['in.bin', 'service'])
  })

  it('bytes that are not the CID\'s fail that gateway (the reader\'s work is thrown away) and the next one is read', async () => {
    const bytes = randomBytes(200_000)
    const { upstream, cid } = await uploaded(bytes)
    const liar = await serving(randomBytes(200_000))
    const reader = collector()
    await gateways(liar.url, upstream).fetchVerifiedInto(cid, PROFILE, reader.read)
    expect(liar.asked()).toBe(1)
    // The liar's bytes were stopped once they did not hash to the CID (or read whole): the last run is the CID's.
    expect((reader.runs.at(-1) as Buffer).equals(bytes)).toBe(true)
    // Only liars: an integrity failure, whatever the reader made of the bytes.
    await expect(gateways(liar.url).fetchVerifiedInto(cid, PROFILE, collector().read)).rejects.toThrow(IntegrityError)
  })

  it('a reader failing over the CID\'s own bytes fails the fetch with its error, without asking another gateway for the same bytes', async () => {
    const bytes = randomBytes(500_000)
    const { upstream, cid } = await uploaded(bytes)
    const second = await serving(bytes)
    await expect(gateways(upstream, second.url).fetchVerifiedInto(cid, PROFILE, collector(100_000).read)).rejects.toThrow('the reader gave up')
    expect(second.asked()).toBe(0)
  })
})
