import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { acquireLock, ensureStatusToken, isDaemonProof, newNonce, proofHeader, StatusServer } from '../../src/daemon/index.js'
import { runCli } from '../helpers/cli.js'
import { httpGet } from '../helpers/http.js'
import { useTempDir } from '../helpers/temp-dir.js'

interface Recorded { method: string, url: string, headers: IncomingMessage['headers'], body: string }

/** A program on the daemon's port that is not the daemon: it records whatever it is sent and answers 200 to all. */
async function fakeListener (): Promise<{ port: number, seen: Recorded[] }> {
  const seen: Recorded[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => { body += chunk.toString() })
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body })
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ nonce: newNonce(), proof: 'forged', code: 'c', expiresAt: 'soon', repaired: 0, folders: [], ms: 1 }))
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return { port: (server.address() as AddressInfo).port, seen }
}

describe('the CLI never hands the status token to an unproven listener', () => {
  it('dashboard, rescan and snapshot refuse a listener that cannot prove it holds the token, and send it nothing secret', async () => {
    const dir = await useTempDir()
    const fake = await fakeListener()
    await mkdir(join(dir, 'state'), { recursive: true, mode: 0o700 })
    await mkdir(join(dir, 'notes'))
    const token = ensureStatusToken(join(dir, 'state'))
    const config = join(dir, 'c.toml')
    await writeFile(config, `state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[service]\ndir = "${join(dir, 'service')}"\n[status]\nlisten = "127.0.0.1:${fake.port}"\n`)

    for (const args of [['dashboard'], ['rescan']]) {
      const result = await runCli([...args, '--config', config])
      expect(result.code, args.join(' ')).toBe(1)
      expect(result.stderr).toContain('did not prove it is this state dir\'s daemon')
      expect(result.stderr).toContain('[ERR_DAEMON_UNPROVEN]')
    }
    // `snapshot` asks the daemon when one holds the lock: here the lock is held, the port is the fake's.
    const lock = acquireLock(join(dir, 'state'))
    try {
      const result = await runCli(['snapshot', '--config', config])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain('[ERR_DAEMON_UNPROVEN]')
    } finally {
      lock.release()
    }

    expect(fake.seen.length).toBeGreaterThanOrEqual(3)
    for (const request of fake.seen) {
      expect(request.method).toBe('GET')
      expect(JSON.stringify(request)).not.toContain(token)
    }
  })

  it('status and status --check believe no answer from a listener that cannot prove it is the daemon', async () => {
    const dir = await useTempDir()
    const fake = await fakeListener()
    await mkdir(join(dir, 'state'), { recursive: true, mode: 0o700 })
    const config = join(dir, 'c.toml')
    await writeFile(config, `state_dir = "state"\n[service]\ndir = "${join(dir, 'service')}"\n[status]\nlisten = "127.0.0.1:${fake.port}"\n`)
    // No daemon has run here: nothing at the port can be one.
    const never = await runCli(['status', '--check', '--config', config])
    expect(never.code).toBe(1)
    expect(never.stderr).toContain('[ERR_STATUS_UNAVAILABLE]')
    expect(never.stdout).not.toContain('ok')

    ensureStatusToken(join(dir, 'state'))
    for (const args of [['status', '--check'], ['status'], ['status', '--json']]) {
      const result = await runCli([...args, '--config', config])
      expect(result.code, args.join(' ')).toBe(1)
      expect(result.stdout, args.join(' ')).toBe('')
      expect(result.stderr).toContain('did not prove it is this state dir\'s daemon')
      expect(result.stderr).toContain('[ERR_DAEMON_UNPROVEN]')
    }
    // The fake was asked only GETs, none carrying the token or a proof: the challenge, and /status
    // without credentials, to say whose daemon it says it is. Nothing it said was shown as the status.
    expect(fake.seen.every(r => r.method === 'GET' && r.headers.authorization === undefined && (r.url.startsWith('/auth-challenge') || r.url === '/status'))).toBe(true)
  })

  it('the daemon accepts a proof once, for the request it was made for, and still takes the bearer token', async () => {
    const dir = await useTempDir()
    const token = ensureStatusToken(dir)
    const server = new StatusServer({ status: () => ({}) as never, token })
    onTestFinished(async () => { await server.close() })
    const bound = await server.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 })
    const port = bound.kind === 'tcp' ? bound.port : 0
    const challenge = async (): Promise<{ nonce: string, proof: string, client: string }> => {
      const client = newNonce()
      const answer = await httpGet({ port }, `/auth-challenge?client=${client}`)
      expect(answer.status).toBe(200)
      return { ...JSON.parse(answer.body) as { nonce: string, proof: string }, client }
    }
    const post = async (path: string, authorization: string): Promise<number> => (await httpGet({ port }, path, { method: 'POST', headers: { authorization } })).status

    const first = await challenge()
    expect(isDaemonProof(token, first.client, first.nonce, first.proof)).toBe(true)
    expect(isDaemonProof('another token', first.client, first.nonce, first.proof)).toBe(false)
    const header = proofHeader(token, 'POST', '/login-code', first.nonce)
    expect(header).not.toContain(token)
    expect(await post('/login-code', header)).toBe(200)
    // Recorded and sent again: spent.
    expect(await post('/login-code', header)).toBe(401)
    // A proof made for another path, or on a nonce the daemon never issued, is worth nothing.
    const second = await challenge()
    expect(await post('/login-code', proofHeader(token, 'POST', '/rescan', second.nonce))).toBe(401)
    expect(await post('/login-code', proofHeader(token, 'POST', '/login-code', newNonce()))).toBe(401)
    expect(await post('/login-code', proofHeader('wrong', 'POST', '/login-code', (await challenge()).nonce))).toBe(401)
    expect(await post('/login-code', `Bearer ${token}`)).toBe(200)
    expect((await httpGet({ port }, '/auth-challenge?client=short')).status).toBe(400)
  })
})
