import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { join } from 'node:path'
import { cidProfile } from '../../src/content/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'

interface Answer { readonly status: number, readonly body: string }

/** A request sent to the service's own loopback port, with whatever `Host` and `Origin` a caller sends. */
async function ask (url: string, path: string, headers: Record<string, string>, method = 'GET'): Promise<Answer> {
  const { hostname, port } = new URL(url)
  return await new Promise<Answer>((resolve, reject) => {
    const req = request({ host: hostname, port, path, method, headers, setHost: false }, res => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

const SIGN_IN = '/api/v1/user/get_auth_message?publicKey=0x1111111111111111111111111111111111111111'

describe.skipIf(EXTERNAL)('local service on loopback: a web page aimed at it is refused', () => {
  it('a request naming another host (DNS rebinding) cannot begin a sign-up; its own names and a proxy\'s listed one can', async () => {
    const service = await localServiceUnderTest({ hosts: ['cidsync.example.com'] })
    const own = new URL(service.local.url).host
    const rebound = await ask(service.local.url, SIGN_IN, { host: `evil.example:${new URL(service.local.url).port}` })
    expect(rebound.status).toBe(421)
    expect(rebound.body).toContain('[local_service] hosts')
    expect(rebound.body).toContain('"evil.example:')
    // No Host at all: node's server refuses it before routing (HTTP/1.1 requires one).
    expect((await ask(service.local.url, SIGN_IN, {})).status).toBe(400)
    expect((await ask(service.local.url, SIGN_IN, { host: own })).status).toBe(200)
    expect((await ask(service.local.url, SIGN_IN, { host: `localhost:${new URL(service.local.url).port}` })).status).toBe(200)
    expect((await ask(service.local.url, SIGN_IN, { host: 'cidsync.example.com' })).status).toBe(200)
    // An SSH tunnel's local port: still a loopback name.
    expect((await ask(service.local.url, SIGN_IN, { host: '127.0.0.1:9' })).status).toBe(200)
    expect((await ask(service.local.url, SIGN_IN, { host: '127.0.0.1.evil.example' })).status).toBe(421)
  })

  it('a page of another origin is refused, but for the gateway\'s reads; a page of its own origin is not', async () => {
    const service = await localServiceUnderTest()
    const own = new URL(service.local.url).host
    const foreign = await ask(service.local.url, SIGN_IN, { host: own, origin: 'https://evil.example' })
    expect(foreign.status).toBe(403)
    expect(foreign.body).toContain('a web page from \\"https://evil.example\\" may not use this service')
    const nullOrigin = await ask(service.local.url, '/api/v0/add', { host: own, origin: 'null', authorization: `Bearer ${service.apiKey}` }, 'POST')
    expect(nullOrigin.status).toBe(403)
    expect((await ask(service.local.url, SIGN_IN, { host: own, origin: `http://${own}` })).status).toBe(200)
    const file = join(await useTempDir(), 'a.txt')
    await writeFile(file, 'public by CID')
    const { cid } = await service.clients.objects.put(file, cidProfile('kubo-cidv1'))
    const read = await ask(service.local.url, `/ipfs/${cid}`, { host: own, origin: 'https://evil.example' })
    expect(read.status).toBe(200)
    expect(read.body).toBe('public by CID')
  })
  it('a cross-site request without Origin (a page\'s <img> or <script> aimed at the port) cannot begin sign-ups either, but reads the gateway (failed before: it filled the sign-in table, refusing everyone with 429)', async () => {
    const service = await localServiceUnderTest()
    const own = new URL(service.local.url).host
    const img = await ask(service.local.url, SIGN_IN, { host: own, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' })
    expect(img.status).toBe(403)
    expect(img.body).toContain('a web page of another site may not use this service')
    // The tools, and a page of its own (or the dashboard's, same site), are not turned away.
    expect((await ask(service.local.url, SIGN_IN, { host: own })).status).toBe(200)
    expect((await ask(service.local.url, SIGN_IN, { host: own, 'sec-fetch-site': 'same-site' })).status).toBe(200)
    expect((await ask(service.local.url, SIGN_IN, { host: own, 'sec-fetch-site': 'none' })).status).toBe(200)
    const file = join(await useTempDir(), 'a.txt')
    await writeFile(file, 'public by CID')
    const { cid } = await service.clients.objects.put(file, cidProfile('kubo-cidv1'))
    const read = await ask(service.local.url, `/ipfs/${cid}`, { host: own, 'sec-fetch-site': 'cross-site' })
    expect(read.status).toBe(200)
  })
})
