import { afterEach } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startLocalService, type LocalService, type LocalServiceInit } from '../../src/local-service/index.js'
import { readFileSync } from 'node:fs'
import { createServiceClients, HttpClient, type ServiceClients } from '../../src/remote/index.js'
import { newWalletKey, parseWalletKey } from '../../src/crypto/index.js'

/**
 * The service the contract tests talk to: the local service on a loopback port by default, or
 * whatever `CIDSYNC_CONTRACT_*` variables name (to run the same tests against production).
 */
export interface ServiceUnderTest {
  readonly clients: ServiceClients
  readonly walletKey: Uint8Array
  readonly address: string
  readonly apiKey: string
  /** Only with the local service: faults, tokens, the request log. */
  readonly local: LocalService | undefined
  readonly baseUrls: { deal: string, api: string, pointer: string, upload: string, gateways: string[] }
}

const env = process.env
export const EXTERNAL = env.CIDSYNC_CONTRACT_DEAL_URL !== undefined && env.CIDSYNC_CONTRACT_DEAL_URL !== ''

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => { for (const c of cleanups.splice(0).reverse()) await c() })

export async function serviceUnderTest (init: Partial<LocalServiceInit> = {}): Promise<ServiceUnderTest> {
  let local: LocalService | undefined
  let baseUrls: ServiceUnderTest['baseUrls']
  if (EXTERNAL) {
    baseUrls = {
      deal: env.CIDSYNC_CONTRACT_DEAL_URL as string,
      api: env.CIDSYNC_CONTRACT_API_URL ?? '',
      pointer: env.CIDSYNC_CONTRACT_POINTER_URL ?? '',
      upload: env.CIDSYNC_CONTRACT_UPLOAD_URL ?? '',
      gateways: (env.CIDSYNC_CONTRACT_GATEWAYS ?? '').split(',').filter(g => g !== '')
    }
  } else {
    const dir = await mkdtemp(join(tmpdir(), 'cidsync-service-'))
    local = await startLocalService({ dir, pageSize: 3, dealDelayMs: 200, admin: true, ...init })
    const service = local
    cleanups.push(async () => { await service.stop(); await rm(dir, { recursive: true, force: true }) })
    baseUrls = { deal: local.url, api: local.url, pointer: local.url, upload: local.url, gateways: [local.url] }
  }
  const walletKey = EXTERNAL && env.CIDSYNC_CONTRACT_WALLET_KEY !== undefined ? parseWalletKey(env.CIDSYNC_CONTRACT_WALLET_KEY) : newWalletKey()
  const credentials = { apiKey: EXTERNAL ? env.CIDSYNC_CONTRACT_API_KEY : undefined, sessionToken: EXTERNAL ? env.CIDSYNC_CONTRACT_SESSION_TOKEN : undefined }
  const clients = createServiceClients(
    { dealUrl: baseUrls.deal, apiUrl: baseUrls.api, pointerUrl: baseUrls.pointer, uploadUrl: baseUrls.upload, gateways: baseUrls.gateways },
    { apiKey: () => credentials.apiKey, sessionToken: () => credentials.sessionToken },
    { retry: { baseDelayMs: 10, maxDelayMs: 50 } }
  )
  cleanups.push(async () => { await clients.close() })
  if (credentials.apiKey === undefined) {
    const login = await clients.deals.login(walletKey)
    credentials.apiKey = login.apiKey
  }
  const { walletAddress } = await import('../../src/crypto/index.js')
  const address = walletAddress(walletKey)
  if (credentials.sessionToken === undefined && local !== undefined) credentials.sessionToken = local.issueToken(address)
  return { clients, walletKey, address, apiKey: credentials.apiKey as string, local, baseUrls }
}

/** The admin token of a local service started with `admin`, as an operator reads it from its dir. */
export function adminTokenOf (local: LocalService): string {
  if (local.adminTokenPath === undefined) throw new Error('this local service was started without its admin routes')
  return readFileSync(local.adminTokenPath, 'utf8').trim()
}

/** A client of the local service's admin routes, carrying its admin token. */
export function adminClient (local: LocalService): HttpClient {
  const token = adminTokenOf(local)
  return new HttpClient({ service: 'local admin', baseUrl: local.url, credential: () => token })
}

/**
 * The local service, for a test that needs its faults or request log: such a test is marked
 * `skipIf(EXTERNAL)` (reported as skipped), and this fails it rather than let it pass without checking.
 */
export async function localServiceUnderTest (init: Partial<LocalServiceInit> = {}): Promise<ServiceUnderTest & { readonly local: LocalService }> {
  const service = await serviceUnderTest(init)
  const local = service.local
  if (local === undefined) throw new Error('this test needs the local service: mark it skipIf(EXTERNAL)')
  return { ...service, local }
}
