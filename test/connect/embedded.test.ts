import { describe, it, expect } from 'vitest'
import { readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { request } from 'undici'
import { loadConfig } from '../../src/config/index.js'
import { connectService } from '../../src/connect/index.js'
import { ConfigError, RemoteStatusError } from '../../src/errors.js'
import { randomBytes } from 'node:crypto'
import { CidBuilder, ObjectBlocksRecorder, cidProfile } from '../../src/content/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

async function embeddedConfig (): Promise<ReturnType<typeof loadConfig>> {
  const dir = await useTempDir()
  await writeFile(join(dir, 'c.toml'), 'state_dir = "state"\n')
  return loadConfig({ configPath: join(dir, 'c.toml'), env: {} })
}

async function statusOf (url: string, token?: string): Promise<number> {
  const answer = await request(`${url}/local/token`, { method: 'POST', headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, body: JSON.stringify({ user: 'someone' }) })
  await answer.body.dump()
  return answer.statusCode
}

describe('the embedded service', () => {
  it('signs in without the admin routes and does not serve them', async () => {
    const config = await embeddedConfig()
    const connection = await connectService(config, {})
    try {
      const url = /http:\/\/127\.0\.0\.1:\d+/.exec(connection.describe)?.[0] as string
      expect(await statusOf(url)).toBe(404)
      expect(connection.credentials.sessionToken()).toMatch(/^ey/)
      await expect(connection.clients.pointers.current('default', 'mainnet')).rejects.toMatchObject({ code: 'ERR_POINTER_NOT_FOUND' })
      expect((await stat(join(config.service.dir, 'embedded-account.json'))).mode & 0o777).toBe(0o600)
      expect((await stat(config.service.dir)).mode & 0o777).toBe(0o700)
    } finally {
      await connection.close()
    }
  })

  it('serves them behind its admin token when CIDSYNC_EMBEDDED_ADMIN=1, and refuses a bad value', async () => {
    const config = await embeddedConfig()
    const connection = await connectService(config, { CIDSYNC_EMBEDDED_ADMIN: '1' })
    try {
      const url = /http:\/\/127\.0\.0\.1:\d+/.exec(connection.describe)?.[0] as string
      const tokenPath = join(config.service.dir, 'admin.token')
      expect(connection.describe).toContain(tokenPath)
      expect(await statusOf(url)).toBe(401)
      expect(await statusOf(url, (await readFile(tokenPath, 'utf8')).trim())).toBe(200)
    } finally {
      await connection.close()
    }
    await expect(connectService(config, { CIDSYNC_EMBEDDED_ADMIN: 'maybe' })).rejects.toBeInstanceOf(ConfigError)
    await expect(connectService(config, { CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS: '1.5' })).rejects.toBeInstanceOf(ConfigError)
  })

  it('stores a storing command\'s uploads in process, on its own thread: listed, no upload request over HTTP, refusals as HTTP\'s', async () => {
    const config = await embeddedConfig()
    const connection = await connectService(config, { CIDSYNC_EMBEDDED_ADMIN: '1' }, { storing: true })
    try {
      const url = /http:\/\/127\.0\.0\.1:\d+/.exec(connection.describe)?.[0] as string
      const token = (await readFile(join(config.service.dir, 'admin.token'), 'utf8')).trim()
      const admin = async (method: 'GET' | 'PUT', path: string, body?: unknown): Promise<unknown> => {
        const answer = await request(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}` }, body: body === undefined ? undefined : JSON.stringify(body) })
        return await answer.body.json()
      }
      const profile = cidProfile('kubo-cidv1')
      const bytes = randomBytes(600 * 1024)
      const path = join(config.stateDir, 'part.bin')
      await writeFile(path, bytes)
      const recorder = new ObjectBlocksRecorder()
      const cid = new CidBuilder(profile, { onBlock: recorder.onBlock }).update(bytes).finish().toString()
      expect(await connection.clients.objects.put(path, profile, { expectedCid: cid, blocks: recorder.take(), name: 'cidsync-part-1.sealed' })).toEqual({ cid, size: bytes.byteLength })
      const listed: string[] = []
      const names: string[] = []
      for await (const record of connection.clients.files()) { listed.push(record.cid); names.push(record.fileName) }
      expect(listed).toEqual([cid])
      // Named as asked, as over HTTP, not after the spool file.
      expect(names).toEqual(['cidsync-part-1.sealed'])
      expect((await admin('GET', '/local/requests') as Array<{ route: string }>).map(r => r.route)).not.toContain('upload')

      // A refusal the route would answer (here an injected 503) is the same error, and nothing is listed.
      await admin('PUT', '/local/faults', { upload: { errorRate: 1, status: 503 } })
      const other = join(config.stateDir, 'other.bin')
      await writeFile(other, randomBytes(1000))
      const refused = await connection.clients.objects.put(other, profile).catch((err: unknown) => err)
      expect(refused).toBeInstanceOf(RemoteStatusError)
      expect(refused).toMatchObject({ status: 503 })
      const after: string[] = []
      for await (const record of connection.clients.files()) after.push(record.cid)
      expect(after).toEqual([cid])
    } finally {
      await connection.close()
    }
  })
})
