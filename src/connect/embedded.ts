import { linkSync, readFileSync, rmSync } from 'node:fs'
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

/**
 * Keeps the first account made for a directory: a daemon and a command starting together on a
 * fresh directory each sign up, and both must end up the same user. The file appears whole
 * (written aside, fsynced, then hard-linked into place, which fails if another got there first).
 */
function claimAccount (dir: string, mine: EmbeddedAccount): EmbeddedAccount {
  const temp = join(dir, `.${ACCOUNT_FILE}.${process.pid}`)
  writeFileAtomicSync(temp, JSON.stringify(mine, null, 2) + '\n', { mode: 0o600 })
  try {
    linkSync(temp, join(dir, ACCOUNT_FILE))
    return mine
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    return readAccount(dir) ?? mine
  } finally {
    rmSync(temp, { force: true })
  }
}

export interface EmbeddedService {
  readonly service: LocalService
  readonly clients: ServiceClients
  readonly address: string
  readonly credentials: { readonly apiKey: () => string | undefined, readonly sessionToken: () => string | undefined }
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
      account = claimAccount(dir, { walletKey: formatWalletKey(walletKey), address: login.address, apiKey: login.apiKey })
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
    return { service, clients, address, credentials: { apiKey: () => credentials.apiKey, sessionToken: () => credentials.sessionToken } }
  } catch (err) {
    await clients.close()
    await service.stop()
    throw err
  }
}
