import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import { statSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig, type Config } from '../../src/config/index.js'
import { connectMirror, findMirror, saveMirrorCredentials } from '../../src/connect/index.js'
import { ConfigError, MirrorCredentialUnboundError, MirrorUnknownError } from '../../src/errors.js'
import { startLocalService } from '../../src/local-service/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

/** A listener that records what each request carried, and answers a pointer. */
async function recorder (): Promise<{ url: string, seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    seen.push(req.headers)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ pointer: { snapshotCid: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', engine: 'cidsync-sqlite/2', namespace: 'default', network: 'mainnet' } }))
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { await new Promise(resolve => server.close(resolve)) })
  const address = server.address() as { port: number }
  return { url: `http://127.0.0.1:${address.port}`, seen }
}

async function configWith (dir: string, mirror: string): Promise<Config> {
  const path = join(dir, 'c.toml')
  await writeFile(path, `state_dir = "state"\n[[mirrors]]\nname = "nas"\n${mirror}\n`)
  return loadConfig({ configPath: path, env: {} })
}

describe('a mirror\'s credentials', () => {
  it('are saved 0600 in the state dir and sent only to the URLs they were signed in at', async () => {
    const dir = await useTempDir()
    const listener = await recorder()
    const other = 'http://127.0.0.1:9'
    const signedInElsewhere = await configWith(dir, `url = "${other}"`)
    const saved = saveMirrorCredentials(signedInElsewhere, findMirror(signedInElsewhere, 'nas'), { apiKey: 'key-1', sessionToken: 'token-1' })
    for (const path of saved) expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(statSync(join(dir, 'state', 'mirrors', 'nas')).mode & 0o777).toBe(0o700)

    // The config now points the mirror at another listener: nothing is sent to it with the credential.
    const moved = await configWith(dir, `url = "${listener.url}"`)
    const connection = connectMirror(moved, findMirror(moved, 'nas'))
    onTestFinished(async () => { await connection.close() })
    await expect(connection.clients.pointers.current('default', 'mainnet')).rejects.toBeInstanceOf(MirrorCredentialUnboundError)
    await expect(connection.clients.pointers.current('default', 'mainnet')).rejects.toThrow('cidsync login --mirror nas')
    expect(listener.seen).toEqual([])

    // Signed in there: sent.
    saveMirrorCredentials(moved, findMirror(moved, 'nas'), { sessionToken: 'token-2' })
    await connection.clients.pointers.current('default', 'mainnet')
    expect(listener.seen.map(h => h.authorization)).toEqual(['Bearer token-2'])
  })

  it('are never the primary\'s: CIDSYNC_API_KEY and CIDSYNC_SESSION_TOKEN do not reach a mirror', async () => {
    const dir = await useTempDir()
    const listener = await recorder()
    const config = await configWith(dir, `url = "${listener.url}"`)
    const saved = { ...process.env }
    process.env.CIDSYNC_SESSION_TOKEN = 'the-primary-token'
    onTestFinished(() => { process.env = saved })
    const connection = connectMirror(config, findMirror(config, 'nas'))
    onTestFinished(async () => { await connection.close() })
    await connection.clients.pointers.current('default', 'mainnet')
    expect(listener.seen.map(h => h.authorization)).toEqual([undefined])
  })

  it('missing or refused, a 401 says to sign in to that mirror, never the primary\'s login or variables (which do not reach it)', async () => {
    const dir = await useTempDir()
    const service = await startLocalService({ dir: join(dir, 'nas-service') })
    onTestFinished(async () => { await service.stop() })
    const config = await configWith(dir, `url = "${service.url}"`)
    const connection = connectMirror(config, findMirror(config, 'nas'))
    onTestFinished(async () => { await connection.close() })
    const failure = async (p: Promise<unknown>): Promise<string> => ((await p.then(() => { throw new Error('it answered') }, (e: unknown) => e)) as Error).message

    const noToken = await failure(connection.clients.pointers.current('default', 'mainnet'))
    expect(noToken).toContain('no session token is saved for mirror nas')
    expect(noToken).toContain('cidsync login --mirror nas --session-token-file T')
    const noKey = await failure((async () => { for await (const object of connection.clients.objects.list()) return object })())
    expect(noKey).toContain('no API key is saved for mirror nas')
    expect(noKey).toContain('cidsync login --mirror nas --wallet-key-file F')

    saveMirrorCredentials(config, findMirror(config, 'nas'), { apiKey: 'not-a-key', sessionToken: 'not.a.token' })
    const refused = await failure(connection.clients.pointers.current('default', 'mainnet'))
    expect(refused).toContain('mirror nas refused its session token')
    for (const message of [noToken, noKey, refused]) {
      expect(message).not.toContain('CIDSYNC_SESSION_TOKEN')
      expect(message).not.toContain('CIDSYNC_API_KEY')
      expect(message).not.toContain('run `cidsync login`')
    }
  })

  it('an unknown mirror name is a usage error that lists the configured ones', async () => {
    const dir = await useTempDir()
    const config = await configWith(dir, 'url = "http://127.0.0.1:9"')
    expect(() => findMirror(config, 'other')).toThrow(MirrorUnknownError)
    expect(() => findMirror(config, 'other')).toThrow('it has nas')
    // verify --mirror takes no path: the error says how a directory gets a name.
    expect(() => findMirror(config, '/media/usb/cidsync')).toThrow('a directory is named by a [[mirrors]] table with path =')
  })
})

describe('[[mirrors]] in the config', () => {
  const load = async (text: string): Promise<Config> => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'c.toml'), text)
    return loadConfig({ configPath: join(dir, 'c.toml'), env: {} })
  }

  it('url fills every part (a self-hosted local service); the parts may be given one by one', async () => {
    const one = await load('[[mirrors]]\nname = "nas"\nurl = "http://127.0.0.1:8790"\n')
    expect(one.mirrors).toEqual([{ name: 'nas', path: '', dealUrl: 'http://127.0.0.1:8790', apiUrl: 'http://127.0.0.1:8790', pointerUrl: 'http://127.0.0.1:8790', uploadUrl: 'http://127.0.0.1:8790', gateways: ['http://127.0.0.1:8790'], deal: true, maxLagSeconds: 21_600 }])
    const parts = await load('[[mirrors]]\nname = "b2"\napi_url = "https://api.example"\npointer_url = "https://p.example"\nupload_url = "https://u.example"\ngateways = ["https://g.example"]\nmax_lag_seconds = 600\n')
    expect(parts.mirrors[0]).toMatchObject({ dealUrl: '', uploadUrl: 'https://u.example', maxLagSeconds: 600 })
  })

  it('path names a directory instead: resolved beside the config, no deals, never with URLs', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'c.toml'), '[[mirrors]]\nname = "usb"\npath = "disk/cidsync"\n')
    const config = loadConfig({ configPath: join(dir, 'c.toml'), env: {} })
    expect(config.mirrors[0]).toMatchObject({ name: 'usb', path: join(dir, 'disk', 'cidsync'), deal: false, uploadUrl: '' })
    await expect(load('[[mirrors]]\nname = "usb"\npath = "/mnt/usb"\nurl = "http://127.0.0.1:1"\n')).rejects.toThrow('not both')
    await expect(load('[[mirrors]]\nname = "usb"\npath = "/mnt/usb"\ndeal = true\n')).rejects.toThrow('makes no deals')
  })

  it('refuses plain http to another machine unless allowed, both url and parts, missing parts, and names used twice', async () => {
    await expect(load('[[mirrors]]\nname = "nas"\nurl = "http://192.168.1.20:8790"\n')).rejects.toThrow(/plain http to another machine[\s\S]*allow_plain_http/)
    expect((await load('[[mirrors]]\nname = "nas"\nurl = "http://192.168.1.20:8790"\nallow_plain_http = true\n')).mirrors[0]?.uploadUrl).toBe('http://192.168.1.20:8790')
    await expect(load('[[mirrors]]\nname = "nas"\nurl = "http://127.0.0.1:1"\nupload_url = "http://127.0.0.1:2"\n')).rejects.toThrow('not both')
    await expect(load('[[mirrors]]\nname = "nas"\napi_url = "https://a.example"\n')).rejects.toThrow(ConfigError)
    await expect(load('[[mirrors]]\nname = "nas"\nurl = "http://127.0.0.1:1"\n[[mirrors]]\nname = "nas"\nurl = "http://127.0.0.1:2"\n')).rejects.toThrow('unique')
  })
})
