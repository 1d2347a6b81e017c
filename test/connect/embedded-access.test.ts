import { describe, expect, it, onTestFinished } from 'vitest'
import { readdirSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { request } from 'undici'
import { loadConfig } from '../../src/config/index.js'
import { connectService } from '../../src/connect/index.js'
import { cidProfile } from '../../src/content/index.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { startLocalService } from '../../src/local-service/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

const openFds = (): number => readdirSync('/proc/self/fd').length

async function embedded (): Promise<{ url: string, dir: string, connection: Awaited<ReturnType<typeof connectService>> }> {
  const dir = await useTempDir()
  await writeFile(join(dir, 'c.toml'), 'state_dir = "state"\n')
  const connection = await connectService(loadConfig({ configPath: join(dir, 'c.toml'), env: {} }), {})
  onTestFinished(async () => { await connection.close() })
  return { url: /http:\/\/127\.0\.0\.1:\d+/.exec(connection.describe)?.[0] as string, dir, connection }
}

/** Idle connections, as another local user would open them; destroyed after the test. */
async function flood (port: number, count: number): Promise<Socket[]> {
  const sockets: Socket[] = []
  onTestFinished(() => { for (const s of sockets) s.destroy() })
  await Promise.all(Array.from({ length: count }, async () => await new Promise<void>(resolve => {
    const socket = connect(port, '127.0.0.1', () => resolve())
    socket.on('error', () => resolve())
    socket.on('close', () => resolve())
    sockets.push(socket)
  })))
  return sockets
}

describe('the embedded service answers only its own process', () => {
  it('refuses another local user\'s sign-up, upload and key, while the daemon\'s own clients work', async () => {
    const { url, dir, connection } = await embedded()
    // What another user does: sign up as production does, then upload and make IPNS keys.
    const stranger = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => 'guess', sessionToken: () => undefined }, { retry: { attempts: 1 } })
    onTestFinished(async () => { await stranger.close() })
    await expect(stranger.deals.login(newWalletKey())).rejects.toThrow(/403|answers only the cidsync process/)
    await expect(stranger.names.create()).rejects.toThrow(/403|answers only the cidsync process/)
    const file = join(dir, 'f.bin')
    await writeFile(file, Buffer.alloc(10_000, 7))
    await expect(stranger.objects.put(file, cidProfile('kubo-cidv1'))).rejects.toThrow(/403|answers only the cidsync process/)
    const raw = await request(`${url}/api/user/files_uploaded`)
    expect(raw.statusCode).toBe(403)
    await raw.body.dump()

    // Its own process: signed in, uploads, keys.
    expect((await connection.clients.objects.put(file, cidProfile('kubo-cidv1'))).cid).toMatch(/^baf/)
    expect((await connection.clients.names.create()).ipnsName).toMatch(/^[0-9a-f]{32}$/)
  })

  it('holds a bounded number of descriptors under hundreds of idle connections, and still serves its process', async () => {
    const { url, connection } = await embedded()
    const before = openFds()
    // Below the listen backlog (511), so every connection is accepted at once rather than retried by the kernel.
    await flood(Number(new URL(url).port), 450)
    // The service's ends are closed past its cap; ours follow once they see it.
    await until(() => openFds() - before < 2 * 128 + 100 ? true : undefined, 30_000, 'descriptors back under the cap')
    await expect(connection.clients.pointers.current('default', 'mainnet')).rejects.toMatchObject({ code: 'ERR_POINTER_NOT_FOUND' })
  }, 60_000)

  it('closes connections past its cap, oldest idle first', async () => {
    const dir = await useTempDir()
    const local = await startLocalService({ dir, maxConnections: 20 })
    onTestFinished(async () => { await local.stop() })
    const sockets = await flood(Number(new URL(local.url).port), 200)
    await until(() => sockets.filter(s => !s.destroyed && s.readyState === 'open').length <= 20 ? true : undefined, 20_000, 'at most 20 connections left open')
    const answer = await request(`${local.url}/ipfs/bafkqaaa?format=raw`)
    expect(answer.statusCode).toBe(200)
    await answer.body.dump()
  })
})
