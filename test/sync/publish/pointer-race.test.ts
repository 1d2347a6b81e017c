import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import pino from 'pino'
import { request } from 'undici'
import { createServiceClients } from '../../../src/remote/index.js'
import { exportKey, importKey } from '../../../src/snapshot/index.js'
import { publish } from '../../../src/sync/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { syncDevice, writeRows, syncOf } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })

async function bodyOf (req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/**
 * A real HTTP proxy in front of the pointer service that, after forwarding the first pointer PUT,
 * runs `between` (another device's whole publish) before it answers: that device's PUT lands
 * between this one's and its read-back, as on a busy account.
 */
async function racingProxy (target: string, between: () => Promise<void>): Promise<{ url: string, raced: () => boolean, failure: () => unknown }> {
  let raced = false
  let failure: unknown
  const server = createServer((req, res) => {
    void (async () => {
      const body = await bodyOf(req)
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length'].includes(name))) as Record<string, string>
      const answer = await request(`${target}${req.url ?? '/'}`, { method: req.method as 'GET', headers, body: body.byteLength === 0 ? undefined : body })
      const answered = Buffer.from(await answer.body.arrayBuffer())
      if (req.method === 'PUT' && !raced) {
        raced = true
        await between()
      }
      res.writeHead(answer.statusCode, { 'content-type': String(answer.headers['content-type'] ?? 'application/json') })
      res.end(answered)
    })().catch((err: unknown) => { failure = err; res.writeHead(502); res.end(String(err)) })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { await new Promise(resolve => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, raced: () => raced, failure: () => failure }
}

describe.skipIf(EXTERNAL)('two devices publishing at once', () => {
  it('another device\'s pointer write between ours and its read-back sends ours round again, and the pointer ends holding both', async () => {
    const service = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'race' })
    const b = await syncDevice(root, 'b', 'bbbbbbbb-0000-4000-8000-000000000000', { namespace: 'race' })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    writeRows(a, 'from-a.md')
    writeRows(b, 'from-b.md', 'also-b.md')

    const proxy = await racingProxy(service.baseUrls.pointer, async () => {
      await publish(syncOf(b, service.clients, logger))
    })
    const { apiKey } = service
    const sessionToken = service.local?.issueToken(service.address)
    const throughProxy = createServiceClients(
      { dealUrl: service.baseUrls.deal, apiUrl: service.baseUrls.api, pointerUrl: proxy.url, uploadUrl: service.baseUrls.upload, gateways: service.baseUrls.gateways },
      { apiKey: () => apiKey, sessionToken: () => sessionToken },
      { retry: { baseDelayMs: 10, maxDelayMs: 50 } }
    )
    onTestFinished(async () => { await throughProxy.close() })

    const steps: string[] = []
    const published = await publish({ ...syncOf(a, throughProxy, logger), onStep: (step, merges) => steps.push(`${step}:${merges}`) })
    expect(proxy.failure()).toBeUndefined()
    expect(proxy.raced()).toBe(true)
    // Outrun once: it merged b's publish and put the pointer again.
    expect(published.merged).toBeGreaterThanOrEqual(1)
    expect(steps.filter(s => s.startsWith('pointer')).length).toBeGreaterThanOrEqual(2)
    expect(published.entries).toBe(3)
    const pointer = await service.clients.pointers.current('race', 'mainnet')
    expect(pointer.snapshotCid).toBe(published.cid)
    expect(pointer.memories).toBe(3)
    expect(a.index.entries.list({ deviceId: b.id }).map(e => e.path).sort()).toEqual(['also-b.md', 'from-b.md'])
  }, 120_000)
})
