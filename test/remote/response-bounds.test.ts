import { describe, it, expect, afterEach } from 'vitest'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { access } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { HttpClient, type HttpClientInit } from '../../src/remote/http-client.js'
import { GatewayClient, listFiles, PointersClient } from '../../src/remote/index.js'
import { cidProfile, bytesCid } from '../../src/content/index.js'
import { RemoteNetworkError, RemoteResponseError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound, within } from '../helpers/wait.js'

/** A real loopback server whose handler writes the answer as it likes: slowly, endlessly, hugely. */
interface RawServer { url: string, requests: number, closedEarly: number, written: number }

const servers: Server[] = []
const clients: HttpClient[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close()
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise<void>(resolve => s.close(() => resolve()))
  }
})

async function rawServer (handle: (res: ServerResponse, req: IncomingMessage, server: RawServer) => void): Promise<RawServer> {
  const state: RawServer = { url: '', requests: 0, closedEarly: 0, written: 0 }
  const server = createServer((req, res) => {
    state.requests++
    res.on('close', () => { if (!res.writableFinished) state.closedEarly++ })
    req.resume()
    handle(res, req, state)
  })
  servers.push(server)
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return state
}

function client (url: string, init: Partial<HttpClientInit> = {}): HttpClient {
  const c = new HttpClient({ service: 'test service', baseUrl: url, retry: { attempts: 1 }, ...init })
  clients.push(c)
  return c
}

/** One byte every `everyMs`, forever: never idle long enough for a body timeout. */
function trickle (everyMs: number) {
  return (res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{')
    const timer = setInterval(() => res.write(' '), everyMs)
    res.on('close', () => clearInterval(timer))
  }
}

/** Writes `total` bytes in 64 KiB pieces as fast as the client reads, counting what went out. */
function flood (prefix: string, total: number, filler: (i: number) => string, headers: Record<string, string> = {}) {
  return (res: ServerResponse, _req: IncomingMessage, state: RawServer): void => {
    res.writeHead(res.statusCode, { 'content-type': 'application/json', ...headers })
    res.write(prefix)
    let i = 0
    const pump = (): void => {
      while (state.written < total && !res.destroyed) {
        const piece = filler(i++)
        state.written += piece.length
        if (!res.write(piece)) { res.once('drain', pump); return }
      }
      if (!res.destroyed) res.end(']}')
    }
    pump()
  }
}

const thing = z.object({ name: z.string() })

describe('bounded answers', () => {
  it('ends a body sent a byte at a time at the total deadline, each attempt, with an error that says so', async () => {
    const server = await rawServer(trickle(100))
    const c = client(server.url, { deadlineMs: 600, bodyTimeoutMs: 60_000, retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 } })
    const started = Date.now()
    const err = await within(c.json({ method: 'GET', path: '/thing' }, thing).catch((e: unknown) => e), 5_000, 'the trickled answer to be given up') as Error
    expect(err).toBeInstanceOf(RemoteNetworkError)
    expect(err.message).toMatch(/test service: GET http:\/\/127\.0\.0\.1:\d+\/thing: the answer did not end within 600 ms \(deadline exceeded\)/)
    const took = Date.now() - started
    // At the deadline, not at the body timeout (60 s): a forever trickle ends no other way.
    expect(took).toBeLessThan(bound(4_000))
    // Each attempt: two of them; one alone only if its deadline fired so late (a loaded machine
    // runs timers late) that the request had already had two deadlines, where retries stop.
    expect(server.requests, `${server.requests} attempts in ${took} ms`).toBeGreaterThanOrEqual(1)
    expect(server.requests, `${server.requests} attempts in ${took} ms`).toBeLessThanOrEqual(2)
    if (server.requests === 1) expect(took, 'one attempt, stopped before two deadlines had passed').toBeGreaterThanOrEqual(1_200)
  })

  it('keeps the deadline running while the caller streams the body (a gateway fetch)', async () => {
    const server = await rawServer(trickle(100))
    const dir = await useTempDir()
    const out = join(dir, 'out.bin')
    const gateway = new GatewayClient([client(server.url)])
    const cid = bytesCid(Buffer.from('x'), cidProfile('kubo-cidv1')).toString()
    const err = await within(gateway.fetchVerified(cid, cidProfile('kubo-cidv1'), out, { deadlineMs: 500 }).catch((e: unknown) => e), 5_000, 'the trickled fetch to be given up') as Error
    expect(err.message).toMatch(/did not end within 500 ms \(deadline exceeded\)/)
    await expect(access(out)).rejects.toThrow()
  })

  it('stops reading a listing page at its cap: a flood never reaches memory', async () => {
    const record = (i: number): string => `${i === 0 ? '' : ','}{"id":"${String(i).padStart(12, '0')}","cid":"bafy${'x'.repeat(40)}","fileName":"f${i}"}`
    const server = await rawServer(flood('{"totalFiles":100000000,"fileList":[', 40 * 1024 * 1024, record))
    const api = client(server.url)
    const started = process.memoryUsage().rss
    const err = await within((async () => { for await (const _ of listFiles(api)) { /* nothing */ } })().catch((e: unknown) => e), 10_000, 'the flood to be cut') as Error
    expect(err).toBeInstanceOf(RemoteResponseError)
    expect(err.message).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/api\/user\/files_uploaded\?lastKey=null&fileType=all: answered more than 8 MiB, the most this endpoint can legitimately send: stopped reading there/)
    await within((async () => { while (server.closedEarly === 0) await new Promise(resolve => setTimeout(resolve, 10)) })(), 5_000, 'the connection to be dropped')
    // What left the server before the drop: the cap plus what the sockets buffer, far from all of it.
    expect(server.written).toBeLessThan(24 * 1024 * 1024)
    expect(process.memoryUsage().rss - started).toBeLessThan(200 * 1024 * 1024)
  })

  it('reads no more of a refusal than its explanation needs', async () => {
    const server = await rawServer((res, req, state) => {
      res.statusCode = 400
      flood('{"error":"', 40 * 1024 * 1024, () => 'z'.repeat(65_536))(res, req, state)
    })
    const err = await within(client(server.url).json({ method: 'GET', path: '/thing' }, thing).catch((e: unknown) => e), 10_000, 'the refusal') as Error
    expect(err.message).toMatch(/answered 400 \(\{"error":"zzz/)
    await within((async () => { while (server.closedEarly === 0) await new Promise(resolve => setTimeout(resolve, 10)) })(), 5_000, 'the connection to be dropped')
    expect(server.written).toBeLessThan(24 * 1024 * 1024)
  })

  it('refuses a pointer announced larger than a pointer can be, without reading it', async () => {
    const server = await rawServer(flood('{"pointer":{"snapshotCid":"bafy","namespace":"n","network":"m","pad":"', 2 * 1024 * 1024, () => 'x'.repeat(65_536), { 'content-length': String(2 * 1024 * 1024 + 71) }))
    const pointers = new PointersClient(client(server.url))
    const err = await pointers.current('n', 'm').catch((e: unknown) => e) as Error
    expect(err).toBeInstanceOf(RemoteResponseError)
    expect(err.message).toMatch(/announced 2 MiB, more than the 256 KiB this endpoint can legitimately send: refused without reading it/)
  })

  it('caps a gateway fetch at the size the caller names, and leaves nothing on disk', async () => {
    const server = await rawServer(flood('', 3 * 1024 * 1024, () => 'y'.repeat(65_536)))
    const dir = await useTempDir()
    const out = join(dir, 'out.bin')
    const gateway = new GatewayClient([client(server.url)])
    const cid = bytesCid(Buffer.from('x'), cidProfile('kubo-cidv1')).toString()
    const err = await gateway.fetchVerified(cid, cidProfile('kubo-cidv1'), out, { maxBytes: 1024 * 1024 }).catch((e: unknown) => e) as Error
    expect(err.message).toMatch(/answered more than 1 MiB, the most this endpoint can legitimately send: stopped reading there/)
    await expect(access(out)).rejects.toThrow()
    await expect(access(`${out}.${process.pid}.part`)).rejects.toThrow()
  })
})
