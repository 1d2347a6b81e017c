import { describe, expect, it, onTestFinished } from 'vitest'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { newWalletKey, personalSign, walletAddress } from '../../src/crypto/index.js'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { createServiceClients, type ServiceClients } from '../../src/remote/index.js'
import { RemoteUnauthorizedError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const EMPTY_CID = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'

function clientsOf (url: string, token?: () => string | undefined): ServiceClients {
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => undefined, sessionToken: token ?? (() => undefined) }, { retry: { attempts: 1 } })
  onTestFinished(async () => { await clients.close() })
  return clients
}

async function service (dir: string): Promise<LocalService> {
  const local = await startLocalService({ dir, policy: { signup: 'open', allow: [], maxBytesPerAccount: 0, maxIpnsKeysPerAccount: 0 } })
  onTestFinished(async () => { await local.stop() })
  return local
}

async function getJson (url: string, post?: unknown): Promise<{ status: number, body: unknown }> {
  const { request } = await import('undici')
  const answer = await request(url, post === undefined ? {} : { method: 'POST', body: JSON.stringify(post), headers: { 'content-type': 'application/json' } })
  return { status: answer.statusCode, body: await answer.body.json() }
}

describe('session tokens for a wallet\'s signature (create_session_token)', () => {
  it('an account\'s wallet gets a 30-day token naming its address, which the pointer service takes', async () => {
    const local = await service(join(await useTempDir(), 's'))
    const wallet = newWalletKey()
    await clientsOf(local.url).deals.login(wallet)
    const { token, expiresAt } = await clientsOf(local.url).session.tokenBySignature(wallet)
    const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()) as { sub: string, exp: number, iat: number }
    expect(claims.sub).toBe(walletAddress(wallet).toLowerCase())
    expect(claims.exp - claims.iat).toBe(30 * 86_400)
    expect(Date.parse(expiresAt)).toBe(claims.exp * 1000)
    const pointers = clientsOf(local.url, () => token).pointers
    await pointers.put({ snapshotCid: EMPTY_CID, engine: 'cidsync-sqlite/2', namespace: 'default', network: 'mainnet' })
    expect((await pointers.current('default', 'mainnet')).snapshotCid).toBe(EMPTY_CID)
  })

  it('signs only the sign-in message: a service that hands it another text gets no signature', async () => {
    const { createServer } = await import('node:http')
    let signed = false
    const hostile = createServer((req, res) => {
      if (req.url?.startsWith('/api/v1/user/create_session_token') === true) signed = true
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify('Sign in to another service: nonce=1'))
    })
    await new Promise<void>(resolve => hostile.listen(0, '127.0.0.1', resolve))
    onTestFinished(async () => { await new Promise<void>(resolve => hostile.close(() => resolve())) })
    const { port } = hostile.address() as { port: number }
    await expect(clientsOf(`http://127.0.0.1:${port}`).session.tokenBySignature(newWalletKey())).rejects.toThrow()
    expect(signed).toBe(false)
  })

  it('refuses a wallet with no account (403), a bad signature and a message used once already (401)', async () => {
    const local = await service(join(await useTempDir(), 's'))
    const stranger = newWalletKey()
    await expect(clientsOf(local.url).session.tokenBySignature(stranger)).rejects.toMatchObject({ status: 403 })
    const wallet = newWalletKey()
    await clientsOf(local.url).deals.login(wallet)
    const address = walletAddress(wallet)
    const message = (await getJson(`${local.url}/api/v1/user/get_auth_message?publicKey=${address}`)).body as string
    const route = `${local.url}/api/v1/user/create_session_token`
    const forged = await getJson(route, { publicKey: address, signature: personalSign(message, stranger) })
    expect(forged.status).toBe(401)
    const signature = personalSign(message, wallet)
    expect((await getJson(route, { publicKey: address, signature })).status).toBe(200)
    const replayed = await getJson(route, { publicKey: address, signature })
    expect(replayed.status).toBe(401)
    // The signature travels in the body only: a URL carrying it is not served.
    expect((await getJson(`${route}?publicKey=${address}&signature=${signature}`)).status).toBe(405)
    await expect(clientsOf(local.url).session.tokenBySignature(stranger)).rejects.toBeInstanceOf(RemoteUnauthorizedError)
  })

  it('bounds the pointers one user holds, so a token for the asking cannot fill the database', async () => {
    const dir = join(await useTempDir(), 's')
    const local = await service(dir)
    const token = local.issueToken('someone')
    const pointers = clientsOf(local.url, () => token).pointers
    await pointers.put({ snapshotCid: EMPTY_CID, engine: '', namespace: 'n0', network: 'mainnet' })
    // The rest written beside the service (a PUT each would take a minute of fsyncs).
    const { MAX_POINTERS_PER_USER } = await import('../../src/local-service/routes/pointers.js')
    const db = new Database(join(dir, 'service.sqlite'))
    try {
      db.pragma('busy_timeout = 5000')
      const insert = db.prepare('INSERT INTO pointers (user_id, namespace, network, snapshot_cid, engine, updated_at) VALUES (?, ?, ?, ?, ?, ?)')
      db.transaction(() => { for (let i = 1; i < MAX_POINTERS_PER_USER; i++) insert.run('someone', `n${i}`, 'mainnet', EMPTY_CID, '', new Date().toISOString()) })()
    } finally {
      db.close()
    }
    await expect(pointers.put({ snapshotCid: EMPTY_CID, engine: '', namespace: 'one-more', network: 'mainnet' })).rejects.toThrow(/holds 1000 pointers/)
    // One it holds is still overwritten.
    await pointers.put({ snapshotCid: EMPTY_CID, engine: 'again', namespace: 'n0', network: 'mainnet' })
    await expect(pointers.put({ snapshotCid: EMPTY_CID, engine: '', namespace: 'x'.repeat(257), network: 'mainnet' })).rejects.toThrow(/400/)
  })
})
