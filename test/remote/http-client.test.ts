import { describe, it, expect, afterEach } from 'vitest'
import { z } from 'zod'
import { HttpClient, type HttpClientInit } from '../../src/remote/http-client.js'
import { RemoteNotFoundError, RemoteResponseError, RemoteStatusError, RemoteUnauthorizedError } from '../../src/errors.js'
import { ScriptedServer } from '../helpers/scripted-server.js'
import { until } from '../helpers/wait.js'

const clients: HttpClient[] = []
afterEach(async () => { for (const c of clients.splice(0)) await c.close() })

async function setup (init: Partial<HttpClientInit> = {}): Promise<{ server: ScriptedServer, client: HttpClient }> {
  const server = await new ScriptedServer().listen()
  const client = new HttpClient({ service: 'test service', baseUrl: `${server.url}/prefix`, retry: { baseDelayMs: 5, maxDelayMs: 20 }, ...init })
  clients.push(client)
  return { server, client }
}

const thing = z.object({ name: z.string() })
const get = { method: 'GET', path: '/thing', query: { q: 'x', none: undefined } } as const

describe('the HTTP core', () => {
  it('sends the credential, the path under the base URL and the query, and parses a bare body', async () => {
    const { server, client } = await setup({ credential: () => 'secret-key' })
    server.answer({ status: 200, body: { name: 'bare' } })
    expect(await client.json(get, thing)).toEqual({ name: 'bare' })
    expect(server.received[0]).toMatchObject({ method: 'GET', url: '/prefix/thing?q=x' })
    expect(server.received[0]?.headers.authorization).toBe('Bearer secret-key')
    expect(server.received[0]?.headers['user-agent']).toMatch(/^cidsync\//)
  })

  it('accepts a body wrapped in {data}', async () => {
    const { server, client } = await setup()
    server.answer({ status: 200, body: { data: { name: 'wrapped' } } })
    expect(await client.json(get, thing)).toEqual({ name: 'wrapped' })
  })

  it('refuses a body of the wrong shape, naming the field', async () => {
    const { server, client } = await setup()
    server.answer({ status: 200, body: { name: 5 } })
    await expect(client.json(get, thing)).rejects.toThrow(RemoteResponseError)
    server.answer({ status: 200, body: 'not json' })
    await expect(client.json(get, thing)).rejects.toThrow(/not JSON/)
  })

  it('retries a 500 and succeeds', async () => {
    const { server, client } = await setup()
    server.answer({ status: 500, body: { error: 'boom' } }, { status: 200, body: { name: 'ok' } })
    expect(await client.json(get, thing)).toEqual({ name: 'ok' })
    expect(server.received).toHaveLength(2)
  })

  it('waits out a 429 for as long as Retry-After says', async () => {
    const { server, client } = await setup()
    server.answer({ status: 429, headers: { 'retry-after': '1' } }, { status: 200, body: { name: 'ok' } })
    expect(await client.json(get, thing)).toEqual({ name: 'ok' })
    const [first, second] = server.received
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(950)
  })

  it('fails at once when Retry-After is longer than it will wait', async () => {
    const { server, client } = await setup({ retry: { baseDelayMs: 5, maxRetryAfterMs: 1_000 } })
    server.answer({ status: 503, headers: { 'retry-after': '3600' } })
    await expect(client.json(get, thing)).rejects.toThrow(RemoteStatusError)
    expect(server.received).toHaveLength(1)
  })

  it('never retries a 400, and says what the service said', async () => {
    const { server, client } = await setup()
    server.answer({ status: 400, body: { error: [{ message: 'Something went wrong.' }] } })
    const err = await client.json(get, thing).catch((e: unknown) => e) as RemoteStatusError
    expect(err).toBeInstanceOf(RemoteStatusError)
    expect(err.status).toBe(400)
    expect(err.message).toBe(`test service: GET ${server.url}/prefix/thing?q=x: answered 400 (Something went wrong.)`)
    expect(server.received).toHaveLength(1)
  })

  it('stops after the bounded number of attempts', async () => {
    const { server, client } = await setup({ retry: { attempts: 3, baseDelayMs: 1 } })
    server.answer({ status: 502, body: 'bad gateway' })
    await expect(client.json(get, thing)).rejects.toThrow(/answered 502 \(bad gateway\): the service failed: try again later/)
    expect(server.received).toHaveLength(3)
  })

  it('gives 401 the hint and never prints the credential', async () => {
    const { server, client } = await setup({ credential: () => 'top-secret', unauthorizedHint: 'the API key was refused: run `cidsync login`' })
    server.answer({ status: 401, body: { error: 'invalid key' } })
    const err = await client.json(get, thing).catch((e: unknown) => e) as Error
    expect(err).toBeInstanceOf(RemoteUnauthorizedError)
    expect(err.message).toContain('run `cidsync login`')
    expect(err.message).not.toContain('top-secret')
    expect(server.received).toHaveLength(1)
  })

  it('a 401 to a request sent with no credential says none is set, not that it was refused', async () => {
    const { server, client } = await setup({ credential: () => undefined, unauthorizedHint: 'the API key was refused', missingHint: 'no API key is set: run `cidsync login`' })
    server.answer({ status: 401, body: { error: 'Authentication failed' } })
    const err = await client.json(get, thing).catch((e: unknown) => e) as Error
    expect(err).toBeInstanceOf(RemoteUnauthorizedError)
    expect(err.message).toContain('no API key is set: run `cidsync login`')
    expect(err.message).not.toContain('was refused')
  })

  it('tells a 404 apart, with exit code 3', async () => {
    const { server, client } = await setup()
    server.answer({ status: 404, body: { error: 'no pointer' } })
    const err = await client.json(get, thing).catch((e: unknown) => e) as RemoteNotFoundError
    expect(err).toBeInstanceOf(RemoteNotFoundError)
    expect(err.exitCode).toBe(3)
  })

  it('retries a reset connection', async () => {
    const { server, client } = await setup()
    server.answer({ reset: true }, { status: 200, body: { name: 'after reset' } })
    expect(await client.json(get, thing)).toEqual({ name: 'after reset' })
  })

  it('bounds a request with a timeout and reports no answer', async () => {
    const { server, client } = await setup({ headersTimeoutMs: 200, retry: { attempts: 2, baseDelayMs: 1 } })
    server.answer({ status: 200, body: { name: 'late' }, delayMs: 3_000 })
    await expect(client.json(get, thing)).rejects.toThrow(/no answer \(UND_ERR_HEADERS_TIMEOUT\)/)
    // The server shares this event loop: under load it may record the second request a little later.
    await until(() => server.received.length === 2 ? true : undefined, 2_000, 'the retry to reach the server')
  })

  it('reports a refused connection after its retries', async () => {
    const { server, client } = await setup({ retry: { attempts: 2, baseDelayMs: 1 } })
    await server.close()
    await expect(client.json(get, thing)).rejects.toThrow(/no answer \(ECONNREFUSED\)/)
  })

  it('sends a JSON body', async () => {
    const { server, client } = await setup()
    server.answer({ status: 200, body: {} })
    await client.send({ method: 'PUT', path: '/v1/pointers', json: { snapshotCid: 'bafy' } })
    expect(server.received[0]).toMatchObject({ method: 'PUT', body: '{"snapshotCid":"bafy"}' })
    expect(server.received[0]?.headers['content-type']).toBe('application/json')
  })

  it('a client closed before its first request sends nothing after, used or not', async () => {
    const { server, client } = await setup({ retry: { attempts: 1 } })
    await client.close()
    await client.close()
    server.answer({ status: 200, body: { name: 'x' } })
    await expect(client.json(get, thing)).rejects.toThrow()
    expect(server.received).toEqual([])
    const other = await setup({ retry: { attempts: 1 } })
    other.server.answer({ status: 200, body: { name: 'y' } })
    expect(await other.client.json(get, thing)).toEqual({ name: 'y' })
    await other.client.close()
    await expect(other.client.json(get, thing)).rejects.toThrow()
    expect(other.server.received).toHaveLength(1)
  })

  it('a second close() answers only once the pool has closed, as the first does', async () => {
    const { server, client } = await setup({ retry: { attempts: 1 } })
    server.answer({ status: 200, body: { name: 'late' }, delayMs: 300 })
    const inFlight = client.json(get, thing)
    await until(() => server.received.length === 1 ? true : undefined, 5000, 'the request to arrive')
    const closed: string[] = []
    const first = client.close().then(() => { closed.push('first') })
    await client.close().then(() => { closed.push('second') })
    await first
    expect(closed).toEqual(['first', 'second'])
    expect(await inFlight).toEqual({ name: 'late' })
  })
})

