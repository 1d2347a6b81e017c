import { describe, it, expect, afterEach } from 'vitest'
import { readdirSync } from 'node:fs'
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import { connect, createServer, type Socket } from 'node:net'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { DEFAULT_STATUS_MAX_CONNECTIONS, StatusServer } from '../../src/daemon/status-server.js'
import { DaemonProcess } from '../helpers/cli.js'
import { ListenError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'
import { writeTestConfig } from '../helpers/config-file.js'

const servers: StatusServer[] = []
const clients: Socket[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy()
  for (const s of servers.splice(0)) await s.close()
})

function statusServer (limits: ConstructorParameters<typeof StatusServer>[1] = {}): StatusServer {
  const server = new StatusServer({ status: () => ({}) as never, token: 't' }, limits)
  servers.push(server)
  return server
}

const openFds = (): number => readdirSync('/proc/self/fd').length

describe.skipIf(process.platform !== 'linux')('the status endpoint under a flood of idle connections', () => {
  it('holds a bounded number of descriptors and still answers a real request', async () => {
    const server = statusServer({ maxConnections: 20, idleTimeoutMs: 60_000 })
    const bound = await server.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 })
    const port = bound.kind === 'tcp' ? bound.port : 0
    const before = openFds()
    await Promise.all(Array.from({ length: 300 }, async () => await new Promise<void>(resolve => {
      const socket = connect(port, '127.0.0.1', () => resolve())
      socket.on('error', () => resolve())
      clients.push(socket)
    })))
    // Ours and the server's ends of each connection it still holds: about 2 x 20, never 2 x 300.
    await until(() => openFds() - before <= 60 ? true : undefined, 10_000, `the excess closed (${openFds() - before} descriptors held)`)
    expect((await httpGet({ port }, '/healthz')).status).toBe(200)
  })

  it('closes a connection that sends nothing once it has been idle for the timeout', async () => {
    const server = statusServer({ idleTimeoutMs: 300 })
    const bound = await server.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 })
    const socket = connect(bound.kind === 'tcp' ? bound.port : 0, '127.0.0.1')
    clients.push(socket)
    const closed = new Promise<void>(resolve => socket.once('close', () => resolve()))
    socket.on('error', () => {})
    await until(async () => await Promise.race([closed.then(() => true), new Promise<undefined>(resolve => setTimeout(() => resolve(undefined), 50))]), 5_000, 'the idle connection to be closed')
  })

  it('does not cut a request that takes longer than the idle timeout (a publish)', async () => {
    const server = new StatusServer({ status: () => ({}) as never, token: 't', publishNow: async () => await new Promise(resolve => setTimeout(() => resolve({ cid: 'x' }), 800)) }, { idleTimeoutMs: 300 })
    servers.push(server)
    const bound = await server.listen({ kind: 'tcp', host: '127.0.0.1', port: 0 })
    const answer = await httpGet({ port: bound.kind === 'tcp' ? bound.port : 0 }, '/snapshot', { method: 'POST', headers: { authorization: 'Bearer t' } })
    expect(answer).toMatchObject({ status: 200, body: '{"cid":"x"}\n' })
  })
})

describe.skipIf(process.platform !== 'linux')('a running daemon under a flood of idle connections', () => {
  it('keeps its descriptors bounded and answers /status', async () => {
    const root = await useTempDir()
    await mkdir(join(root, 'notes'))
    const file = await writeTestConfig(root, { watch: { settle_ms: undefined } }, 'c.toml')
    const daemon = new DaemonProcess(['--config', file])
    await daemon.logged('daemon started')
    const port = Number((JSON.parse(await readFile(join(root, 'state', 'daemon.json'), 'utf8')) as { status: string }).status.split(':').pop())
    const fds = (): number => readdirSync(`/proc/${daemon.child.pid ?? 0}/fd`).length
    const before = fds()
    await Promise.all(Array.from({ length: 300 }, async () => await new Promise<void>(resolve => {
      const socket = connect(port, '127.0.0.1', () => resolve())
      socket.on('error', () => resolve())
      clients.push(socket)
    })))
    await until(() => clients.filter(c => !c.destroyed && c.readyState === 'open').length <= DEFAULT_STATUS_MAX_CONNECTIONS + 5 ? true : undefined, 10_000, 'the excess to be closed')
    // The cap plus what the daemon opens meanwhile (a hashing thread, the index's WAL): bounded, not 300.
    expect(fds() - before).toBeLessThanOrEqual(DEFAULT_STATUS_MAX_CONNECTIONS + 25)
    expect((await httpGet({ port }, '/status')).status).toBe(200)
    expect((await daemon.stop()).code).toBe(0)
  })
})

describe('listen = "unix:PATH"', () => {
  it('never deletes a regular file or a directory at PATH: the start is refused and it stays', async () => {
    const dir = await useTempDir()
    const file = join(dir, 'precious.txt')
    await writeFile(file, 'not a socket')
    await expect(statusServer().listen({ kind: 'unix', path: file })).rejects.toThrow(ListenError)
    await expect(statusServer().listen({ kind: 'unix', path: file })).rejects.toThrow(/a regular file is there, and it is not replaced/)
    expect(await readFile(file, 'utf8')).toBe('not a socket')
    await mkdir(join(dir, 'sub'))
    await expect(statusServer().listen({ kind: 'unix', path: join(dir, 'sub') })).rejects.toThrow(/a directory is there/)
    expect((await stat(join(dir, 'sub'))).isDirectory()).toBe(true)
  })

  it('replaces a stale socket, and refuses one another program listens on', async () => {
    const dir = await useTempDir()
    const stale = join(dir, 'stale.sock')
    // A process that dies without removing its socket, as a daemon killed with -9 does.
    spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stale)}, () => process.exit(0))`])
    expect((await stat(stale)).isSocket()).toBe(true)
    const server = statusServer()
    await server.listen({ kind: 'unix', path: stale })
    expect((await httpGet({ socketPath: stale }, '/healthz', { host: 'localhost' })).status).toBe(200)
    // curl's URL names the host: any other than localhost is refused, with the one to use.
    const wrongHost = await httpGet({ socketPath: stale }, '/healthz', { host: 'x' })
    expect(wrongHost.status).toBe(403)
    expect(wrongHost.body).toContain('curl --unix-socket PATH http://localhost/status')

    const live = join(dir, 'live.sock')
    const other = createServer(socket => socket.end())
    await new Promise<void>(resolve => other.listen(live, resolve))
    try {
      await expect(statusServer().listen({ kind: 'unix', path: live })).rejects.toThrow(/another program listens on it/)
    } finally {
      await new Promise(resolve => other.close(resolve))
    }
  })
})
