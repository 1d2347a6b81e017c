import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ensureStatusToken } from '../../src/daemon/index.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** An unproven listener on 127.0.0.1: 404 to the challenge, `status` (after `delayMs`) to /status. */
async function liar (status: unknown, delayMs = 0): Promise<number> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/status') { setTimeout(() => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(status)) }, delayMs); return }
    res.statusCode = 404
    res.end('{}')
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) })
  return (server.address() as AddressInfo).port
}

async function setup (port: number): Promise<string> {
  const dir = await useTempDir()
  await mkdir(join(dir, 'f'))
  await mkdir(join(dir, 'state'))
  ensureStatusToken(join(dir, 'state'))
  const configPath = join(dir, 'c.toml')
  await writeFile(configPath, `state_dir = "state"\n[[folders]]\nname = "f"\npath = "f"\n[status]\nlisten = "127.0.0.1:${port}"\n`)
  return configPath
}

describe('what an unproven listener says of itself', () => {
  it('a huge state dir, control characters and an odd pid are not printed as they are', async () => {
    const port = await liar({ pid: -1.5e300, stateDir: '/srv/\u001b]0;owned\u0007\u001b[2J' + 'A'.repeat(3_000_000), version: '1' })
    const r = await runCli(['status', '--config', await setup(port)], { timeoutMs: 20_000 })

    expect(r.code).not.toBe(0)
    expect(r.stderr).not.toContain('\u001b')
    expect(r.stderr).not.toContain('-1.5e+300')
    expect(r.stderr.length).toBeLessThan(10_000)
  })

  it('the extra ask is bounded: a /status that never answers still ends in the plain refusal', async () => {
    const port = await liar({ pid: 1, stateDir: '/other', version: '1' }, 60_000)
    // The listener holds /status a minute; the ask gives up long before runCli's own limit.
    const r = await runCli(['status', '--config', await setup(port)], { timeoutMs: 30_000 })
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('did not prove it is this state dir\'s daemon')
    expect(r.stderr).not.toContain('It says it is another cidsync daemon')
  })

  it('a real-looking answer still names the other daemon, its state dir made safe', async () => {
    const port = await liar({ pid: 4242, stateDir: '/srv/other\u001b[2J', version: '1' })
    const r = await runCli(['status', '--config', await setup(port)], { timeoutMs: 20_000 })
    expect(r.stderr).toContain('It says it is another cidsync daemon (pid 4242, state dir /srv/other\\x1b[2J)')
  })
})
