import { describe, it, expect } from 'vitest'
import { sharedInProcessDaemon, startInProcessDaemon, stopWhenFinished } from '../helpers/in-process-daemon.js'
import { mkdir, readFile, stat, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { loadConfig } from '../../src/config/index.js'
import { Daemon, type StatusDocument } from '../../src/daemon/index.js'
import { LockHeldError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within, until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'
import { writeTestConfig, type TestConfigOptions } from '../helpers/config-file.js'

const running: Daemon[] = []

async function startDaemon (dir: string, config: TestConfigOptions = {}): Promise<{ daemon: Daemon, port: number }> {
  return await startInProcessDaemon(dir, config)
}

describe('the status endpoint', () => {
  it('answers /healthz, /status and /metrics on loopback', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    await writeFile(join(dir, 'notes', 'a.md'), 'hello')
    const { port } = await startDaemon(dir)
    expect(await httpGet({ port }, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' })
    const status = await httpGet({ port }, '/status')
    expect(status.headers['content-type']).toContain('application/json')
    const doc = JSON.parse(status.body) as StatusDocument
    expect(doc).toMatchObject({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      namespace: 'default',
      network: 'mainnet',
      watcher: { state: 'watching', currentAt: expect.any(String) },
      folders: [{ name: 'notes', state: 'watching', files: 1, bytes: 5, scan: { scanned: 1, toHash: 0, hashed: 1 }, skipped: 0, error: null }],
      index: { files: 1, bytes: 5 },
      filesSkipped: 0
    })
    expect(doc.device.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(doc.uptimeSeconds).toBeGreaterThanOrEqual(0)
    const reached = await until(async () => {
      const d = JSON.parse((await httpGet({ port }, '/status')).body) as StatusDocument
      return d.service.endpoint !== null ? d : undefined
    }, 10_000, 'the embedded service to be reached')
    expect(reached.service).toMatchObject({ mode: 'embedded', endpoint: expect.stringMatching(/^the embedded service at http:\/\/127\.0\.0\.1:\d+/), error: null })
    const metrics = await httpGet({ port }, '/metrics')
    expect(metrics.headers['content-type']).toContain('text/plain; version=0.0.4')
    expect(metrics.body).toContain('cidsync_folder_files{folder="notes"} 1')
    expect(metrics.body).toContain('cidsync_watcher_state{state="watching"} 1')
    // Every state is listed, the drift check's `verifying` too, so a dashboard's query never finds a state missing.
    for (const state of ['starting', 'scanning', 'verifying', 'degraded', 'stopped']) expect(metrics.body).toContain(`cidsync_watcher_state{state="${state}"} 0`)
    for (const line of metrics.body.split('\n').filter(l => l !== '' && !l.startsWith('#'))) expect(line).toMatch(/^cidsync_[a-z_]+(\{.*\})? [0-9.e+-]+$/)
  })

  it('asks for the token on /metrics when configured', async () => {
    const dir = await useTempDir()
    const { port } = await startDaemon(dir, { status: { metrics_token: true } })
    expect((await httpGet({ port }, '/metrics')).status).toBe(401)
    const token = (await readFile(join(dir, 'state', 'status.token'), 'utf8')).trim()
    expect((await httpGet({ port }, '/metrics', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
    expect((await httpGet({ port }, '/healthz')).status).toBe(200)
    expect((await stat(join(dir, 'state', 'status.token'))).mode & 0o777).toBe(0o600)
  })

  it('puts its socket in the runtime dir for listen = "unix:"', async () => {
    const dir = await useTempDir()
    await writeTestConfig(dir, { folders: [], status: { listen: 'unix:' } })
    const config = loadConfig({ configPath: join(dir, 'config.toml'), env: { XDG_RUNTIME_DIR: join(dir, 'run') } })
    expect(config.status.listen).toEqual({ kind: 'unix', path: join(dir, 'run', 'cidsync', 'status.sock') })
    expect(loadConfig({ configPath: join(dir, 'config.toml'), env: { RUNTIME_DIRECTORY: '/run/cidsync' } }).status.listen).toEqual({ kind: 'unix', path: '/run/cidsync/status.sock' })
    const daemon = new Daemon({ logger: pino({ level: 'silent' }) }, { config })
    stopWhenFinished(running, daemon)
    await within(daemon.start(), 10_000, 'the daemon to start')
    expect((await httpGet({ socketPath: join(dir, 'run', 'cidsync', 'status.sock') }, '/healthz', { host: 'localhost' })).status).toBe(200)
  })

  it('listens on a unix socket only its owner may use', async () => {
    const dir = await useTempDir()
    const socketPath = join(dir, 'status.sock')
    const { daemon } = await startDaemonOnSocket(dir, socketPath)
    expect(daemon.statusAddress).toBe(`unix:${socketPath}`)
    expect((await stat(socketPath)).mode & 0o777).toBe(0o600)
    expect(await httpGet({ socketPath }, '/healthz', { host: 'localhost' })).toMatchObject({ status: 200 })
  })
})

describe('the status endpoint, asked by hosts, origins and methods it must refuse (one daemon for all)', () => {
  const daemon = sharedInProcessDaemon()

  it.each(['evil.example', `evil.example:PORT`, '127.0.0.1.evil.example:PORT', '10.0.0.1:PORT'])('refuses Host %j with 403 (DNS rebinding)', async (host) => {
    const { port } = daemon()
    const answer = await httpGet({ port }, '/status', { host: host.replace('PORT', String(port)) })
    expect(answer.status).toBe(403)
    expect(answer.body).not.toContain('device')
  })

  it.each(['localhost:PORT', '127.0.0.1:PORT', '[::1]:PORT', 'LOCALHOST:PORT'])('accepts Host %j', async (host) => {
    const { port } = daemon()
    expect((await httpGet({ port }, '/healthz', { host: host.replace('PORT', String(port)) })).status).toBe(200)
  })

  it('answers only to its own port, and refuses requests from web pages', async () => {
    const { port } = daemon()
    expect((await httpGet({ port }, '/healthz', { host: `127.0.0.1:${port + 1}` })).status).toBe(403)
    expect((await httpGet({ port }, '/healthz', { host: '127.0.0.1' })).status).toBe(403)
    for (const origin of ['http://evil.example', 'null', `http://localhost:${port + 1}`, `https://127.0.0.1:${port}`]) {
      expect((await httpGet({ port }, '/status', { headers: { origin } })).status, origin).toBe(403)
    }
    expect((await httpGet({ port }, '/status', { headers: { origin: `http://127.0.0.1:${port}` } })).status).toBe(200)
    expect((await httpGet({ port }, '/status')).headers['access-control-allow-origin']).toBeUndefined()
  })

  it('answers 404 for an unknown path and 405 for a method it does not take', async () => {
    const { port } = daemon()
    expect((await httpGet({ port }, '/nope')).status).toBe(404)
    const put = await httpGet({ port }, '/status', { method: 'PUT' })
    expect(put.status).toBe(405)
    expect(put.headers.allow).toBe('GET, HEAD')
    expect((await httpGet({ port }, '/snapshot', { method: 'POST' })).status).toBe(401)
  })
})

async function startDaemonOnSocket (dir: string, socketPath: string): Promise<{ daemon: Daemon }> {
  await writeTestConfig(dir, { folders: [], status: { listen: `unix:${socketPath}` } })
  const daemon = new Daemon({ logger: pino({ level: 'silent' }) }, { config: loadConfig({ configPath: join(dir, 'config.toml'), env: {} }) })
  stopWhenFinished(running, daemon)
  await within(daemon.start(), 10_000, 'the daemon to start')
  return { daemon }
}

describe('the daemon', () => {
  it('runs once per state dir: a second one is refused, naming the first', async () => {
    const dir = await useTempDir()
    await startDaemon(dir)
    const config = loadConfig({ configPath: join(dir, 'config.toml'), env: {} })
    const second = new Daemon({ logger: pino({ level: 'silent' }) }, { config })
    const err = await second.start().then(() => undefined, (e: unknown) => e)
    expect(err).toBeInstanceOf(LockHeldError)
    expect((err as Error).message).toContain(`pid ${process.pid}`)
  })

  it('shows a missing folder as an error and keeps its indexed files', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    await writeFile(join(dir, 'notes', 'kept.md'), 'kept')
    const first = await startDaemon(dir)
    await first.daemon.stop()
    running.splice(0)
    const { rm } = await import('node:fs/promises')
    await rm(join(dir, 'notes'), { recursive: true })
    const daemon = new Daemon({ logger: pino({ level: 'silent' }) }, { config: loadConfig({ configPath: join(dir, 'config.toml'), env: {} }) })
    stopWhenFinished(running, daemon)
    await within(daemon.start(), 10_000, 'the daemon to start')
    await within(daemon.current(), 10_000, 'the startup scan')
    const doc = daemon.status()
    expect(doc.watcher.state).toBe('degraded')
    expect(doc.folders[0]).toMatchObject({ state: 'error', files: 1, error: expect.stringContaining('does not exist') })
  })

  it('keeps answering status while a large file is being hashed', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    // Sparse: 1 GiB to hash on one thread (seconds), nothing written to disk.
    await writeFile(join(dir, 'notes', 'big.img'), '')
    await truncate(join(dir, 'notes', 'big.img'), 1024 ** 3)
    await writeTestConfig(dir, { watch: { hash_workers: 1 } })
    const daemon = new Daemon({ logger: pino({ level: 'silent' }) }, { config: loadConfig({ configPath: join(dir, 'config.toml'), env: {} }) })
    stopWhenFinished(running, daemon)
    await within(daemon.start(), 10_000, 'the daemon to start')
    const port = Number(daemon.statusAddress?.split(':').pop())
    let answeredWhileHashing = 0
    const slow: number[] = []
    for (let i = 0; i < 200 && daemon.status().folders[0]?.scan.hashed === 0; i++) {
      const started = Date.now()
      expect((await httpGet({ port }, '/healthz')).status).toBe(200)
      const ms = Date.now() - started
      // This process runs the daemon and asks it: one stall of a loaded machine can hold a single
      // answer; a hash on the main thread would hold every answer until it ends (seconds).
      if (ms >= 1_000) slow.push(ms)
      else if (daemon.status().folders[0]?.scan.toHash === 1) answeredWhileHashing++
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    expect(answeredWhileHashing, `answers within 1 s while hashing (slower ones: ${slow.join(', ')} ms)`).toBeGreaterThan(3)
    await within(daemon.current(), 30_000, 'the hash of the large file')
    expect(daemon.status().index.files).toBe(1)
  })

  it('keeps indexing when the service cannot be reached, and says why', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'), { recursive: true })
    await writeFile(join(dir, 'notes', 'a.md'), 'a')
    await writeFile(join(dir, 'not-a-dir'), 'a file where the service dir should be')
    const { daemon } = await startDaemon(dir, { service: { dir: join(dir, 'not-a-dir', 'service') } })
    const doc = await until(() => { const d = daemon.status(); return d.service.error !== null ? d : undefined }, 10_000, 'the service error')
    expect(doc.service.error).toMatch(/ENOTDIR|not a directory/)
    expect(doc.index.files).toBe(1)
    expect(doc.watcher.state).toBe('watching')
  })

  it('stops publishing on an expired session token, says so, keeps indexing, and sends no request for it', async () => {
    const dir = await useTempDir()
    const { startLocalService } = await import('../../src/local-service/index.js')
    const service = await startLocalService({ dir: join(dir, 'remote-service') })
    const saved = { token: process.env.CIDSYNC_SESSION_TOKEN, key: process.env.CIDSYNC_API_KEY }
    const { createServiceClients } = await import('../../src/remote/index.js')
    const { newWalletKey } = await import('../../src/crypto/index.js')
    const signup = createServiceClients({ dealUrl: service.url, apiUrl: service.url, pointerUrl: service.url, uploadUrl: service.url, gateways: [] }, { apiKey: () => undefined, sessionToken: () => undefined })
    try {
      process.env.CIDSYNC_API_KEY = (await signup.deals.login(newWalletKey())).apiKey
      // Issued already expired (a minute ago), instead of waiting for a one-second token to expire.
      process.env.CIDSYNC_SESSION_TOKEN = service.issueToken('someone', -60)
      const url = service.url
      const { daemon, port } = await startDaemon(dir, { service: { mode: 'remote', deal_url: url, api_url: url, pointer_url: url, upload_url: url, gateways: [url] } })
      await until(() => daemon.status().publish !== null ? true : undefined, 10_000, 'the runner')
      await writeFile(join(dir, 'notes', 'new.md'), 'still indexed')
      await until(() => daemon.status().index.files === 1 ? true : undefined, 10_000, 'the new file to be indexed')
      const token = (await readFile(join(dir, 'state', 'status.token'), 'utf8')).trim()
      const refused = await httpRequest(port, '/snapshot', token)
      expect(refused.status).toBe(502)
      expect(refused.body).toContain('the session token expired at')
      const doc = daemon.status()
      expect(doc.auth.sessionToken.warning).toContain('expired')
      expect(service.requestLog().filter(r => r.route.startsWith('pointers'))).toHaveLength(0)
    } finally {
      for (const [name, value] of [['CIDSYNC_SESSION_TOKEN', saved.token], ['CIDSYNC_API_KEY', saved.key]] as const) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
      await signup.close()
      await service.stop()
    }
  })
})

async function httpRequest (port: number, path: string, token: string): Promise<{ status: number, body: string }> {
  const { request } = await import('node:http')
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${token}` }, timeout: 10_000 }, res => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { body += c })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}
