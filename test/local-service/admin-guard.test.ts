import { describe, it, expect, afterEach } from 'vitest'
import { mkdir, readFile, stat, chmod, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { request } from 'node:http'
import { startLocalService, type LocalService, type LocalServiceInit } from '../../src/local-service/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const started: LocalService[] = []
afterEach(async () => { for (const s of started.splice(0)) await s.stop() })

async function service (init: Partial<LocalServiceInit> = {}): Promise<{ local: LocalService, port: number, dir: string }> {
  const dir = join(await useTempDir(), 'service')
  const local = await startLocalService({ dir, ...init })
  started.push(local)
  return { local, port: Number(new URL(local.url).port), dir }
}

/** A request as a browser or a local program would send it: any Host, Origin, body. */
async function send (port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number, body: string }> {
  return await new Promise((resolve, reject) => {
    const req = request({ agent: false, host: '127.0.0.1', port, path, method, headers: { host: `127.0.0.1:${port}`, ...headers }, timeout: 5_000 }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { text += c })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

const mintBody = JSON.stringify({ user: 'victim', ttlSeconds: 60 })

describe('the local service\'s admin routes', () => {
  it('refuse a cross-site browser POST, a foreign Host, a null Origin and a missing or wrong token; the admin token works', async () => {
    const { local, port } = await service({ admin: true })
    const token = (await readFile(local.adminTokenPath as string, 'utf8')).trim()
    const auth = { authorization: `Bearer ${token}` }
    // A page on evil.example posting a simple form-like request: no preflight in a browser.
    const crossSite = await send(port, 'POST', '/local/token', { origin: 'http://evil.example', 'content-type': 'text/plain' }, mintBody)
    expect(crossSite.status).toBe(403)
    expect(crossSite.body).not.toContain('token"')
    expect((await send(port, 'POST', '/local/token', { ...auth, origin: 'http://evil.example' }, mintBody)).status).toBe(403)
    expect((await send(port, 'POST', '/local/token', { ...auth, origin: 'null' }, mintBody)).status).toBe(403)
    // DNS rebinding: the page's own name, resolved to 127.0.0.1.
    expect((await send(port, 'POST', '/local/token', { ...auth, host: `evil.example:${port}` }, mintBody)).status).toBe(403)
    expect((await send(port, 'POST', '/local/token', { ...auth, host: '127.0.0.1:1' }, mintBody)).status).toBe(403)
    const noToken = await send(port, 'POST', '/local/token', {}, mintBody)
    expect(noToken.status).toBe(401)
    expect(noToken.body).toContain('admin.token')
    expect((await send(port, 'POST', '/local/token', { authorization: 'Bearer wrong' }, mintBody)).status).toBe(401)
    expect((await send(port, 'PUT', '/local/faults', {}, '{"*": {"errorRate": 1}}')).status).toBe(401)
    expect((await send(port, 'GET', '/local/requests')).status).toBe(401)
    expect((await send(port, 'POST', '/local/seed-files', {}, '{"address": "0xabc", "count": 1}')).status).toBe(401)
    expect((await send(port, 'DELETE', '/local/files?cid=x')).status).toBe(401)

    const minted = await send(port, 'POST', '/local/token', { ...auth, origin: `http://127.0.0.1:${port}` }, mintBody)
    expect(minted.status).toBe(200)
    const session = (JSON.parse(minted.body) as { token: string }).token
    expect((await send(port, 'GET', '/v1/pointers/current', { authorization: `Bearer ${session}` })).status).toBe(404)
    expect((await send(port, 'GET', '/local/requests', { ...auth, host: `localhost:${port}` })).status).toBe(200)
  })

  it('keep one admin token per directory, however many services start on it', async () => {
    const { dir } = await service({ admin: true })
    const [a, b] = await Promise.all([startLocalService({ dir, admin: true }), startLocalService({ dir, admin: true })])
    started.push(a, b)
    const token = (await readFile(join(dir, 'admin.token'), 'utf8')).trim()
    for (const local of [a, b]) expect((await send(Number(new URL(local.url).port), 'GET', '/local/requests', { authorization: `Bearer ${token}` })).status).toBe(200)
  })

  it('do not exist unless asked for', async () => {
    const { local, port, dir } = await service()
    expect(local.adminTokenPath).toBeUndefined()
    for (const [method, path] of [['POST', '/local/token'], ['PUT', '/local/faults'], ['DELETE', '/local/faults'], ['GET', '/local/requests'], ['POST', '/local/seed-files'], ['DELETE', '/local/files']]) {
      expect((await send(port, method as string, path as string, {}, method === 'GET' ? undefined : mintBody)).status, `${method} ${path}`).toBe(404)
    }
    expect(await readdir(dir)).not.toContain('admin.token')
  })

  it('are never blocked by a fault rule: a fault on every route is cleared through them', async () => {
    const { local, port } = await service({ admin: true })
    const auth = { authorization: `Bearer ${(await readFile(local.adminTokenPath as string, 'utf8')).trim()}` }
    const set = await send(port, 'PUT', '/local/faults', auth, JSON.stringify({ '*': { errorRate: 1, status: 503 }, local_faults: { resetRate: 1 }, local_token: { errorRate: 1 } }))
    expect(set.status).toBe(200)
    expect((await send(port, 'GET', '/ipfs/bafkqaaa?format=raw')).status).toBe(503)
    expect((await send(port, 'POST', '/local/token', auth, mintBody)).status).toBe(200)
    expect((await send(port, 'GET', '/local/requests', auth)).status).toBe(200)
    expect((await send(port, 'DELETE', '/local/faults', auth)).status).toBe(200)
    expect((await send(port, 'GET', '/ipfs/bafkqaaa?format=raw')).status).toBe(200)
  })
})

describe('the local service\'s files', () => {
  it('are private: the directory 0700, the database with its WAL and shared memory 0600, blocks and the admin token 0600', async () => {
    const { local, port, dir } = await service({ admin: true })
    const mode = async (path: string): Promise<string> => ((await stat(path)).mode & 0o777).toString(8)
    expect(await mode(dir)).toBe('700')
    for (const file of ['service.sqlite', 'service.sqlite-wal', 'service.sqlite-shm', 'admin.token']) expect(await mode(join(dir, file)), file).toBe('600')
    // A block, through a real upload.
    const { createServiceClients } = await import('../../src/remote/index.js')
    const { newWalletKey } = await import('../../src/crypto/index.js')
    const { cidProfile } = await import('../../src/content/index.js')
    const { writeFile } = await import('node:fs/promises')
    const clients = createServiceClients({ dealUrl: local.url, apiUrl: local.url, pointerUrl: local.url, uploadUrl: local.url, gateways: [local.url] }, { apiKey: () => key, sessionToken: () => undefined })
    let key: string | undefined
    try {
      key = (await clients.deals.login(newWalletKey())).apiKey
      const file = join(dir, '..', 'a.txt')
      await writeFile(file, 'a block')
      await clients.objects.put(file, cidProfile('kubo-cidv1'))
    } finally {
      await clients.close()
    }
    const packs = join(dir, 'packs')
    expect(await mode(packs)).toBe('700')
    const [pack] = await readdir(packs)
    expect(await mode(join(packs, pack as string))).toBe('600')
    expect(port).toBeGreaterThan(0)
  })

  it('tightens a directory and database left open to others', async () => {
    const first = await service()
    await first.local.stop()
    started.splice(0)
    await chmod(first.dir, 0o755)
    for (const file of ['service.sqlite', 'service.sqlite-wal', 'service.sqlite-shm']) await chmod(join(first.dir, file), 0o644).catch(() => {})
    await mkdir(first.dir, { recursive: true })
    const again = await startLocalService({ dir: first.dir })
    started.push(again)
    expect(((await stat(first.dir)).mode & 0o777).toString(8)).toBe('700')
    for (const file of ['service.sqlite', 'service.sqlite-wal', 'service.sqlite-shm']) expect(((await stat(join(first.dir, file))).mode & 0o777).toString(8), file).toBe('600')
  })
})
