import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { loopbackRequest } from '../../src/util/loopback-request.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function serve (handler: RequestListener, where: { port: number, host: string } | { path: string }): Promise<Server> {
  const server = createServer(handler)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(where, resolve)
  })
  onTestFinished(async () => {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })
  return server
}

const tcp = (server: Server): { host: string, port: number } => ({ host: '127.0.0.1', port: (server.address() as AddressInfo).port })

describe('one request to a local listener', () => {
  it('sends the method, path and headers, and answers the status, headers and body', async () => {
    const server = await serve((req, res) => {
      res.setHeader('retry-after', '3')
      res.end(JSON.stringify({ method: req.method, url: req.url, auth: req.headers.authorization }))
    }, { port: 0, host: '127.0.0.1' })
    const answer = await loopbackRequest(tcp(server), '/snapshot?x=1', { method: 'POST', headers: { authorization: 'proof' }, timeoutMs: 5_000, maxBytes: 1_000 })
    expect(answer.statusCode).toBe(200)
    expect(answer.headers['retry-after']).toBe('3')
    expect(JSON.parse(answer.body)).toEqual({ method: 'POST', url: '/snapshot?x=1', auth: 'proof' })
  })

  it('reaches a listener on a unix socket', async () => {
    const path = join(await useTempDir(), 's.sock')
    await serve((_req, res) => { res.end('over the socket') }, { path })
    expect((await loopbackRequest({ socketPath: path }, '/status', { timeoutMs: 5_000, maxBytes: 1_000 })).body).toBe('over the socket')
  })

  it('refuses an answer past its bound, and one that never comes, each with its code', async () => {
    const server = await serve((req, res) => {
      if (req.url === '/large') res.end('x'.repeat(10_000))
      // '/silent' is never answered: the timeout ends it.
    }, { port: 0, host: '127.0.0.1' })
    await expect(loopbackRequest(tcp(server), '/large', { timeoutMs: 5_000, maxBytes: 1_000 })).rejects.toMatchObject({ code: 'EMSGSIZE' })
    await expect(loopbackRequest(tcp(server), '/silent', { timeoutMs: 200, maxBytes: 1_000 })).rejects.toMatchObject({ code: 'ETIMEDOUT' })
  })

  it('fails an answer that switches protocols (101) instead of never settling', async () => {
    const server = await serve(() => {}, { port: 0, host: '127.0.0.1' })
    server.removeAllListeners('request')
    server.on('request', (req) => { req.socket.end('HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n') })
    const outcome = await Promise.race([
      loopbackRequest(tcp(server), '/auth-challenge', { timeoutMs: 500, maxBytes: 1_000 }).then(() => 'resolved', (err: { code?: string }) => err.code),
      new Promise(resolve => setTimeout(() => resolve('never settled'), 2_000).unref())
    ])
    expect(outcome).toBe('EPROTO')
  })

  it('fails an answer cut short, and a port nobody listens on, with a code', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': '100' })
      res.write('only part')
      setImmediate(() => { res.socket?.destroy() })
    }, { port: 0, host: '127.0.0.1' })
    await expect(loopbackRequest(tcp(server), '/', { timeoutMs: 5_000, maxBytes: 1_000 })).rejects.toHaveProperty('code')
    const port = tcp(server).port
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
    await expect(loopbackRequest({ host: '127.0.0.1', port }, '/', { timeoutMs: 5_000, maxBytes: 1_000 })).rejects.toMatchObject({ code: 'ECONNREFUSED' })
  })
})
