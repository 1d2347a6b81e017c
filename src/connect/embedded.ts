import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { formatWalletKey, newWalletKey, parseWalletKey, walletAddress } from '../crypto/index.js'
import { startLocalService, type LocalService } from '../local-service/index.js'
import { z } from 'zod'
import { createServiceClients, HttpClient, type ServiceClients } from '../remote/index.js'
import { writeFileAtomicSync } from '../util/atomic-write.js'

/** The account of an embedded service: made once, kept in its directory (0600). */
interface EmbeddedAccount { walletKey: string, address: string, apiKey: string }

const ACCOUNT_FILE = 'embedded-account.json'
const TOKEN_TTL_SECONDS = 7 * 86_400

function readAccount (dir: string): EmbeddedAccount | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, ACCOUNT_FILE), 'utf8')) as EmbeddedAccount
  } catch {
    return undefined
  }
}

export interface EmbeddedService {
  readonly service: LocalService
  readonly clients: ServiceClients
  readonly address: string
}

/**
 * Starts the local service in-process on a free loopback port and signs in to it the way a user
 * signs in to production: a wallet made once, a signed message traded for an API key, a session
 * token from the identity route. The account lives in the service's directory, so every device
 * pointed at the same directory (a NAS folder) is the same user.
 */
export async function startEmbedded (dir: string): Promise<EmbeddedService> {
  const service = await startLocalService({ dir })
  const credentials: { apiKey?: string, sessionToken?: string } = {}
  const url = service.url
  const clients = createServiceClients(
    { dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] },
    { apiKey: () => credentials.apiKey, sessionToken: () => credentials.sessionToken }
  )
  try {
    let account = readAccount(dir)
    if (account === undefined) {
      const walletKey = newWalletKey()
      const login = await clients.deals.login(walletKey)
      account = { walletKey: formatWalletKey(walletKey), address: login.address, apiKey: login.apiKey }
      writeFileAtomicSync(join(dir, ACCOUNT_FILE), JSON.stringify(account, null, 2) + '\n', { mode: 0o600 })
    }
    credentials.apiKey = account.apiKey
    const address = walletAddress(parseWalletKey(account.walletKey))
    const identity = new HttpClient({ service: 'local identity route', baseUrl: url })
    try {
      const answer = await identity.json({ method: 'POST', path: '/local/token', json: { user: address, ttlSeconds: TOKEN_TTL_SECONDS } }, z.object({ token: z.string() }))
      credentials.sessionToken = answer.token
    } finally {
      await identity.close()
    }
    return { service, clients, address }
  } catch (err) {
    await clients.close()
    await service.stop()
    throw err
  }
}
