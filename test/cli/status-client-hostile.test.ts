import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer as createHttpServer } from 'node:http'
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/index.js'
import { indexPath, openIndex } from '../../src/index/index.js'
import { ensureStatusToken } from '../../src/daemon/index.js'
import { daemonProof } from '../../src/daemon/status-proof.js'
import { getFromDaemon, postToDaemon } from '../../src/cli/status-client.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** A raw listener on a unix socket: each read of a connection (a request's head, here) is answered by `answer`. */
async function rawListener (path: string, answer: (socket: Socket, head: string) => void): Promise<NetServer> {
  const server = createNetServer(socket => {
    socket.on('error', () => {})
    socket.on('data', (data: Buffer) => { answer(socket, data.toString('latin1')) })
  })
  await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(path, resolve) })
  onTestFinished(async () => { await new Promise(resolve => server.close(resolve)) })
  return server
}

/** A state dir a daemon ran with once (status.token there), its config naming a unix socket. */
async function stoppedDaemonSetup (): Promise<{ configPath: string, socket: string, stateDir: string, token: string }> {
  const dir = await useTempDir()
  await mkdir(join(dir, 'f'))
  const stateDir = join(dir, 'state')
  await mkdir(stateDir)
  const token = ensureStatusToken(stateDir)
  const socket = join(dir, 's.sock')
  const configPath = join(dir, 'c.toml')
  await writeFile(configPath, `state_dir = "state"\n[[folders]]\nname = "f"\npath = "f"\n[status]\nlisten = "unix:${socket}"\n`)
  return { configPath, socket, stateDir, token }
}

const within = async <T>(p: Promise<T>, ms: number): Promise<T | 'never settled'> =>
  await Promise.race([p, new Promise<'never settled'>(resolve => setTimeout(() => resolve('never settled'), ms).unref())])

describe('a hostile listener on a stopped daemon\'s socket', () => {
  it('answering 101 Switching Protocols to the challenge fails the ask, as any other non-proof does', async () => {
    const { configPath, socket } = await stoppedDaemonSetup()
    await rawListener(socket, s => { s.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n') })
    const config = loadConfig({ configPath })
    const outcome = await within(getFromDaemon(config, '/status').then(() => 'believed', (err: Error) => err.constructor.name), 3_000)
    expect(outcome).not.toBe('never settled')
    expect(outcome).not.toBe('believed')
  })

  it('does not let `status --check` exit 0 (all is well) when a 101 answers the challenge', async () => {
    const { configPath, socket } = await stoppedDaemonSetup()
    await rawListener(socket, s => { s.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n') })
    const result = await runCli(['status', '--check', '--config', configPath], { timeoutMs: 20_000 })
    expect(result.code).not.toBe(0)
  })
})

describe('a proven daemon that answers 503 with odd Retry-After values', () => {
  it('waits within its bounds, and prints the reason with control characters neutralised', async () => {
    const { configPath, socket, token } = await stoppedDaemonSetup()
    let posts = 0
    const retryAfter = ['-5', '1e400', 'Wed, 21 Oct 2015 07:28:00 GMT', '']
    await rawListener(socket, (s, head) => {
      const line = head.split('\r\n')[0] ?? ''
      const challenge = /^GET \/auth-challenge\?client=([A-Za-z0-9_-]+) /.exec(line)
      if (challenge !== null) {
        const nonce = 'n'.repeat(20) + String(Date.now())
        const body = JSON.stringify({ nonce, proof: daemonProof(token, challenge[1] as string, nonce) })
        s.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
        return
      }
      const value = retryAfter[posts++] ?? '0'
      const body = JSON.stringify({ error: `busy \u001b]0;title\u0007\u001b[2J ${posts}` })
      s.write(`HTTP/1.1 503 Service Unavailable\r\nretry-after: ${value}\r\nretry-after: 99999\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
    })
    const config = loadConfig({ configPath })
    const written: string[] = []
    const write = process.stderr.write.bind(process.stderr)
    process.stderr.write = ((chunk: string) => { written.push(String(chunk)); return true }) as typeof process.stderr.write
    const started = Date.now()
    try {
      const outcome = await within(postToDaemon(config, '/snapshot', 2_000, 4_000).then(() => 'resolved', (err: Error) => err.message), 15_000)
      expect(outcome).not.toBe('never settled')
      expect(outcome).toMatch(/not ready within 4 s/)
    } finally {
      process.stderr.write = write
    }
    expect(Date.now() - started).toBeLessThan(8_000)
    expect(written.join('')).not.toMatch(/[\u001b\u0007]/)
  })
})

describe('a daemon that proves itself, then stops before it answers', () => {
  it('believes nothing said on another connection: what took the socket since is not the daemon', async () => {
    const { configPath, socket, token } = await stoppedDaemonSetup()
    await rawListener(socket, (s, head) => {
      const challenge = /^GET \/auth-challenge\?client=([A-Za-z0-9_-]+) /.exec(head.split('\r\n')[0] ?? '')
      if (challenge === null) {
        // Another program's answer, on a connection of its own: it must not be shown as the status.
        const body = JSON.stringify({ ok: true, forged: true })
        s.end(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
        return
      }
      const nonce = 'n'.repeat(20) + String(Date.now())
      const body = JSON.stringify({ nonce, proof: daemonProof(token, challenge[1] as string, nonce) })
      // The proof, then the connection closed: as a daemon stopping right after it.
      s.end(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`)
    })
    const outcome = await within(getFromDaemon(loadConfig({ configPath }), '/status').then(body => `believed ${body}`, (err: Error) => err.message), 10_000)
    expect(outcome).not.toMatch(/believed|never settled/)
    expect(outcome).toMatch(/no daemon answers|closed the connection it proved itself on/)
  })
})

describe('a listener that is not a daemon at all', () => {
  it('is named as another program that may hold the socket, with the command that shows it, not as a daemon to start', async () => {
    const { configPath, socket } = await stoppedDaemonSetup()
    await rawListener(socket, s => { s.end('SSH-2.0-OpenSSH_9.2\r\n') })
    const outcome = await within(getFromDaemon(loadConfig({ configPath }), '/status').then(() => 'believed', (err: Error) => err.message), 10_000)
    expect(outcome).toMatch(/does not answer as a cidsync daemon \((HPE_\w+|ECONNRESET)\)/)
    expect(outcome).toContain('another program may hold the socket: check with `ss -lxp`')
  })
})

describe('ls beside such a listener', () => {
  it('answers from the state dir, and says on stderr why it did not ask the daemon', async () => {
    const { configPath, socket, stateDir } = await stoppedDaemonSetup()
    openIndex(indexPath(stateDir)).close()
    await rawListener(socket, s => { s.end('SSH-2.0-OpenSSH_9.2\r\n') })
    const listed = await runCli(['ls', '--config', configPath], { timeoutMs: 30_000 })
    expect(listed.stderr).toContain('does not answer as a cidsync daemon')
    expect(listed.stderr).toContain('shown from the state dir instead')
  })
})

describe('another state dir\'s daemon on the configured port (two configs on the default port)', () => {
  it('says whose it says it is, and how to give this config a port of its own', async () => {
    const { configPath, stateDir } = await stoppedDaemonSetup()
    const other = createHttpServer((req, res) => {
      if (req.url === '/status') res.end(JSON.stringify({ pid: 4242, stateDir: '/srv/other/state', version: '0.1.0' }))
      else { res.statusCode = 404; res.end() }
    })
    await new Promise<void>(resolve => other.listen(0, '127.0.0.1', resolve))
    onTestFinished(async () => { other.closeAllConnections(); await new Promise(resolve => other.close(resolve)) })
    const port = (other.address() as AddressInfo).port
    await writeFile(configPath, `state_dir = "${stateDir}"\n[[folders]]\nname = "f"\npath = "f"\n[status]\nlisten = "127.0.0.1:${port}"\n`)
    const outcome = await within(getFromDaemon(loadConfig({ configPath }), '/status').then(() => 'believed', (err: Error) => err.message), 10_000)
    expect(outcome).toContain('It says it is another cidsync daemon (pid 4242, state dir /srv/other/state)')
    expect(outcome).toContain('[status] listen = "127.0.0.1:0"')
  })
})
