import { describe, expect, it, onTestFinished } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import pino from 'pino'
import { loadConfig } from '../../../src/config/index.js'
import { bytesCid, cidProfile } from '../../../src/content/index.js'
import { indexPath, openIndex } from '../../../src/index/index.js'
import { startLocalService } from '../../../src/local-service/index.js'
import { createServiceClients } from '../../../src/remote/index.js'
import { newWalletKey } from '../../../src/crypto/index.js'
import { storeContent, SyncStore, type StoreContentProgress } from '../../../src/sync/index.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { repositoryOf } from '../../helpers/sync-device.js'

const MIB = 1024 * 1024

/**
 * A loopback proxy in front of the local service that counts the uploads in flight at once and
 * when each upload byte arrived, holding every upload `holdMs` before passing it on.
 */
async function countingProxy (target: string, holdMs: number): Promise<{ url: string, inFlight: { now: number, peak: number, total: number }, arrivals: Array<[number, number]> }> {
  const inFlight = { now: 0, peak: 0, total: 0 }
  const arrivals: Array<[number, number]> = []
  const to = new URL(target)
  const server: Server = createServer((req, res) => {
    const upload = req.url?.startsWith('/api/v0/add') === true
    if (upload) { inFlight.now++; inFlight.total++; inFlight.peak = Math.max(inFlight.peak, inFlight.now) }
    const done = (): void => { if (upload) inFlight.now-- }
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => { chunks.push(chunk); if (upload) arrivals.push([performance.now(), chunk.byteLength]) })
    req.on('end', () => {
      setTimeout(() => {
        const out = request({ host: to.hostname, port: to.port, path: req.url, method: req.method, headers: { ...req.headers, host: to.host } }, answer => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
          answer.on('end', done)
        })
        out.on('error', () => { done(); res.destroy() })
        out.end(Buffer.concat(chunks))
      }, upload ? holdMs : 0)
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, inFlight, arrivals }
}

/** A device whose folder `data` holds `files` (indexed), storing through `proxyHold` ms of proxy, with `[content]` lines. */
async function setup (files: number, size: number | ((i: number) => number), content: string, holdMs: number, sealing = 'encryption = "none"\n'): Promise<{ run: (onProgress?: (event: StoreContentProgress) => void) => ReturnType<typeof storeContent>, proxy: Awaited<ReturnType<typeof countingProxy>> }> {
  const root = await useTempDir()
  const data = join(root, 'data')
  await mkdir(data)
  await writeFile(join(root, 'c.toml'), `state_dir = "state"\nnamespace = "limits"\n[[folders]]\nname = "data"\npath = "data"\nstore = true\n[snapshot]\ndeal = false\n[content]\n${sealing}${content}`)
  const config = loadConfig({ configPath: join(root, 'c.toml'), env: {} })
  await mkdir(config.stateDir, { recursive: true })
  const index = openIndex(indexPath(config.stateDir))
  onTestFinished(() => { index.close() })
  index.entries.registerDevice('dev-1', 'one')
  const profile = cidProfile('kubo-cidv1')
  const rows = []
  for (let i = 0; i < files; i++) {
    const bytes = randomBytes(typeof size === 'number' ? size : size(i))
    await writeFile(join(data, `f-${i}.bin`), bytes)
    rows.push({ kind: 'upsert' as const, folder: 'data', path: `f-${i}.bin`, size: bytes.byteLength, mtimeMs: 1, cid: bytesCid(bytes, profile).toString(), cidProfile: 'kubo-cidv1' })
  }
  index.entries.apply('dev-1', rows)
  const service = await startLocalService({ dir: join(root, 'service') })
  onTestFinished(async () => { await service.stop() })
  const proxy = await countingProxy(service.url, holdMs)
  let apiKey: string | undefined
  const clients = createServiceClients({ dealUrl: proxy.url, apiUrl: proxy.url, pointerUrl: proxy.url, uploadUrl: proxy.url, gateways: [proxy.url] }, { apiKey: () => apiKey, sessionToken: () => undefined })
  onTestFinished(async () => { await clients.close() })
  apiKey = (await clients.deals.login(newWalletKey())).apiKey
  const store = new SyncStore(config.stateDir)
  onTestFinished(() => { store.close() })
  const run = async (onProgress?: (event: StoreContentProgress) => void): ReturnType<typeof storeContent> => await storeContent({ index, repository: repositoryOf({ config, store }, clients), logger: pino({ level: 'silent' }), deviceId: 'dev-1', hostname: 'one' }, { onProgress })
  return { run, proxy }
}

describe('content uploads keep to [content] concurrency and upload_rate', () => {
  it('never has more uploads in flight than concurrency, and does use them', async () => {
    const { run, proxy } = await setup(8, 300_000, 'concurrency = 3\n', 300)
    const result = await run()
    expect(result.failed).toEqual([])
    expect(result.storedFiles).toBe(8)
    expect(proxy.inFlight.total).toBe(8)
    expect(proxy.inFlight.peak).toBeLessThanOrEqual(3)
    // Each upload is held 300 ms: eight one at a time would mean the limit was never used.
    expect(proxy.inFlight.peak).toBeGreaterThan(1)
  })

  it('seals small files for packs many at once beside the large ones, and still has at most concurrency uploads in flight', async () => {
    // Sealed: the small files go into packs, which upload nothing per file; every tenth file is large (its own part).
    const { run, proxy } = await setup(60, i => i % 10 === 0 ? MIB + 1000 * i : 2000 + 100 * i, 'concurrency = 1\n', 50, '')
    const result = await run()
    expect(result.failed).toEqual([])
    expect(result.storedFiles).toBe(60)
    expect(proxy.inFlight.peak).toBe(1)
    // Six parts and the pack(s) of 54 small files: far fewer uploads than files.
    expect(proxy.inFlight.total).toBeLessThanOrEqual(8)
  })

  it('sends no faster than upload_rate, whatever the concurrency', async () => {
    // 4 MiB at 1 MiB/s with a burst of one second's worth: at least 3 s from the first byte to the last.
    const { run, proxy } = await setup(4, MIB, `upload_rate = ${MIB}\nconcurrency = 4\n`, 0)
    const result = await run()
    expect(result.storedFiles).toBe(4)
    const first = proxy.arrivals[0]?.[0] ?? 0
    const last = proxy.arrivals.at(-1)?.[0] ?? 0
    const bytes = proxy.arrivals.reduce((sum, [, n]) => sum + n, 0)
    expect(bytes).toBeGreaterThan(4 * MIB)
    // Generous: the bound holds however slow the machine; only a missing limit finishes sooner.
    expect(last - first).toBeGreaterThan(2_500)
  })
})

describe('what storing tells as it goes', () => {
  it('tells each file as storing:file, then the stored ones as storing:stored, by folder/path', async () => {
    const { run } = await setup(3, 2000, '', 0, '')
    const events: StoreContentProgress[] = []
    const result = await run((event) => { events.push(event) })
    expect(result.storedFiles).toBe(3)
    const names = ['data/f-0.bin', 'data/f-1.bin', 'data/f-2.bin']
    const files = events.filter(e => e.type === 'storing:file').map(e => `${e.detail.folder}/${e.detail.path}`)
    expect(files.sort()).toEqual(names)
    const stored = events.filter(e => e.type === 'storing:stored')
    expect(stored.reduce((sum, e) => sum + e.detail.files, 0)).toBe(3)
    expect(stored.reduce((sum, e) => sum + e.detail.bytes, 0)).toBe(6000)
    expect(stored.flatMap(e => e.detail.keys).sort()).toEqual(names)
    expect(events.filter(e => e.type === 'storing:failed')).toEqual([])
  })
})
