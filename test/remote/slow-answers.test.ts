import { describe, it, expect, afterEach } from 'vitest'
import { access } from 'node:fs/promises'
import { join } from 'node:path'
import { HttpClient, type HttpClientInit } from '../../src/remote/http-client.js'
import { GatewayClient, PointersClient } from '../../src/remote/index.js'
import { bytesCid, cidProfile } from '../../src/content/index.js'
import { RemoteNetworkError } from '../../src/errors.js'
import { ScriptedServer } from '../helpers/scripted-server.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within } from '../helpers/wait.js'

const clients: HttpClient[] = []
afterEach(async () => { for (const c of clients.splice(0)) await c.close() })

/** A client whose bounds are small, so a trickle is caught in a fraction of a second. */
function client (url: string, init: Partial<HttpClientInit> = {}): HttpClient {
  const c = new HttpClient({ service: 'test service', baseUrl: url, rate: { minBytesPerSecond: 1000, graceMs: 300 }, retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 }, ...init })
  clients.push(c)
  return c
}

/** A pointer answer padded so that, a byte every 50 ms, it would take minutes to arrive. */
const POINTER = JSON.stringify({ pointer: { snapshotCid: 'bafkqaaa', engine: 'cidsync-sqlite/2', namespace: 'n', network: 'calibration', updatedAt: '2026-01-01T00:00:00Z', pad: ' '.repeat(4000) } })

describe('answers that trickle', () => {
  it('gives up a pointer answer sent a byte at a time at the minimum rate, not after minutes', async () => {
    const server = await new ScriptedServer().answer({ status: 200, body: POINTER, trickleMs: 50 }).listen()
    const pointers = new PointersClient(client(server.url))
    const err = await within(pointers.current('n', 'calibration').catch((e: unknown) => e), 10_000, 'the trickled pointer to be given up')
    expect(err).toBeInstanceOf(RemoteNetworkError)
    expect((err as Error).message).toMatch(/the answer came slower than 1000 bytes\/s \(\d+ bytes in [\d.]+ s\): the service or the link is stalled; try again later/)
    expect(server.received.length).toBe(3)
  })

  it('stops trying again once timed-out attempts have taken two deadlines', async () => {
    const server = await new ScriptedServer().answer({ status: 200, body: POINTER, trickleMs: 20 }).listen()
    const c = client(server.url, { rate: { minBytesPerSecond: 0, graceMs: 0 }, deadlineMs: 400, retry: { attempts: 10, baseDelayMs: 1, maxDelayMs: 1 } })
    const started = Date.now()
    const err = await within(c.text({ method: 'GET', path: '/v1/pointers/current' }).catch((e: unknown) => e), 10_000, 'the trickled answer to be given up') as Error
    const took = Date.now() - started
    expect(err.message).toMatch(/did not end within 400 ms \(deadline exceeded\)/)
    // Two attempts of 400 ms, not ten. One alone only if its deadline fired so late (a loaded
    // machine runs timers late) that the request had already had its two deadlines.
    expect(server.received.length, `${server.received.length} attempts in ${took} ms`).toBeGreaterThanOrEqual(1)
    expect(server.received.length, `${server.received.length} attempts in ${took} ms`).toBeLessThanOrEqual(2)
    if (server.received.length === 1) expect(took, 'one attempt, stopped before two deadlines had passed').toBeGreaterThanOrEqual(800)
  })

  it('gives up a gateway fetch that trickles, trying the next gateway, and leaves nothing on disk', async () => {
    const bytes = Buffer.from('the bytes the CID names')
    const cid = bytesCid(bytes, cidProfile('kubo-cidv1')).toString()
    const slow = await new ScriptedServer().answer({ status: 200, body: bytes.toString().repeat(1000), trickleMs: 50 }).listen()
    const fast = await new ScriptedServer().answer({ status: 200, body: bytes.toString() }).listen()
    const dir = await useTempDir()
    const out = join(dir, 'out.bin')
    const gateway = new GatewayClient([client(slow.url, { retry: { attempts: 1 } }), client(fast.url)])
    const got = await within(gateway.fetchVerified(cid, cidProfile('kubo-cidv1'), out), 10_000, 'the fetch to move to the next gateway')
    expect(got.gateway).toBe(fast.url)
    const alone = new GatewayClient([client(slow.url, { retry: { attempts: 1 } })])
    const err = await within(alone.fetchVerified(cid, cidProfile('kubo-cidv1'), join(dir, 'other.bin')).catch((e: unknown) => e), 10_000, 'the trickled fetch to be given up') as Error
    expect(err.message).toMatch(/could not fetch .*the answer came slower than 1000 bytes\/s/)
    await expect(access(join(dir, 'other.bin'))).rejects.toThrow()
    await expect(access(join(dir, `other.bin.${process.pid}.part`))).rejects.toThrow()
  })

  it('lets an answer that arrives at once through under the same bounds', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(2500) })
    const server = await new ScriptedServer().answer({ status: 200, body }).listen()
    const c = client(server.url)
    expect(await c.text({ method: 'GET', path: '/x' })).toBe(body)
  })
})
