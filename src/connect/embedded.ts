import { randomBytes } from 'node:crypto'
import { formatWalletKey, newWalletKey, parseWalletKey, walletAddress } from '../crypto/index.js'
import { ACCESS_HEADER, startLocalService, startLocalServiceThread, type DeleteWalk, type ServiceThread } from '../local-service/index.js'
import { createServiceClients, type ServiceClients, type ServicePointers } from '../remote/index.js'
import { pointersInProcess } from './embedded-pointers.js'
import { claimAccount, knownAddress, readAccount } from './embedded-account.js'
import { DEFAULT_EMBEDDED_TOKEN_TTL_SECONDS, type EmbeddedOptions } from './embedded-options.js'
import { EmbeddedObjectStore, type LocalReads } from './embedded-store.js'

export interface EmbeddedService {
  readonly service: ServiceThread
  readonly clients: ServiceClients
  readonly address: string
  readonly credentials: { readonly apiKey: () => string | undefined, readonly sessionToken: () => string | undefined }
}

/**
 * A session token issued in-process (no HTTP route to guard) and issued again once half its life
 * has passed, so whoever reads it never holds an expired one: publishing never stops for it.
 */
function renewingToken (service: ServiceThread, user: string, ttlSeconds: number): () => string {
  let current: { token: string, renewAt: number } | undefined
  return () => {
    const now = Date.now()
    if (current === undefined || now >= current.renewAt) {
      // The token's exp is whole seconds from the floored issue time.
      const expiresAt = (Math.floor(now / 1000) + ttlSeconds) * 1000
      current = { token: service.issueToken(user, ttlSeconds), renewAt: expiresAt - ttlSeconds * 500 }
    }
    return current.token
  }
}

/**
 * Starts the local service in-process (in a thread of its own) on a free loopback port and signs in to it the way a user
 * signs in to production: a wallet made once, a signed message traded for an API key. The session
 * token is issued in-process, as the identity provider would, and renewed before it expires. The
 * account lives in the service's directory, so every device pointed at the same directory (a NAS
 * folder) is the same user. The admin routes exist only when `options.admin` asks for them. It
 * answers only this process (a random access key every request carries) and holds a bounded
 * number of connections.
 */
export async function startEmbedded (dir: string, options: Partial<EmbeddedOptions> & { readonly thread?: boolean } = {}): Promise<EmbeddedService> {
  // Held only in this process: any other local user who finds the loopback port is refused (403)
  // instead of signing up, uploading into this directory and making keys.
  const accessKey = randomBytes(32).toString('base64url')
  // `thread`: for what stores content (the daemon, `snapshot`), so its imports (hashing, writing,
  // fsyncing every block) run beside this process's reading and sealing instead of between them.
  // Else on this thread: a restore's one small fetch after another answers sooner without the
  // hop between threads (a restore of 3,000 small files took up to 1.5x as long through one).
  const init = { dir, admin: options.admin ?? false, accessKey }
  const local = options.thread === true ? undefined : await startLocalService(init)
  const service: ServiceThread = local ?? await startLocalServiceThread(init)
  // On this thread, its blocks are read here: a restore's objects without the loopback HTTP hop.
  const reads: LocalReads | undefined = local === undefined
    ? undefined
    : {
        block: async (cid, into) => await local.readStoredBlock(cid, into),
        run: async (cids, into) => await local.readStoredBlocks(cids, into),
        held: (apiKey, cids) => local.heldFiles(apiKey, cids),
        // With the admin routes on, faults may be set on its routes, and only a request meets them.
        ...(init.admin
          ? {}
          : {
              uploads: {
                page: (apiKey: string, beforeSeq: number | undefined) => local.listUploads(apiKey, beforeSeq),
                remove: (apiKey: string, cids: readonly string[], walk: DeleteWalk) => local.deleteUploads(apiKey, cids, walk),
                newest: (apiKey: string, cid: string) => local.newestUpload(apiKey, cid)
              }
            })
      }
  const credentials: { apiKey?: string, sessionToken?: () => string } = {}
  // The user its session tokens name, once signed in: the pointer route reads and writes this user's row.
  let user: string | undefined
  const url = service.url
  const clients = createServiceClients(
    { dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] },
    { apiKey: () => credentials.apiKey, sessionToken: () => credentials.sessionToken?.() },
    // Its objects are added in this process (the same quota, durability and listing as its
    // upload route), and read here when it runs on this thread: see EmbeddedObjectStore. Its
    // pointer too, as its route reads and writes it, but where faults may be set on its routes.
    {
      headers: { [ACCESS_HEADER]: accessKey },
      objects: overHttp => new EmbeddedObjectStore(overHttp, service, () => credentials.apiKey, reads),
      ...(local === undefined || init.admin
        ? {}
        : {
            pointers: (overHttp: ServicePointers) => pointersInProcess({
              row: (namespace, network) => user === undefined ? undefined : local.pointer(user, namespace, network),
              put: (input) => user !== undefined && local.putPointer(user, input) !== undefined
            }, async () => overHttp)
          })
    }
  )
  try {
    let account = readAccount(dir)
    if (account === undefined) {
      const walletKey = newWalletKey()
      const login = await clients.deals.login(walletKey)
      account = claimAccount(dir, { walletKey: formatWalletKey(walletKey), address: login.address, apiKey: login.apiKey })
    }
    credentials.apiKey = account.apiKey
    // The address was kept beside the key when the account was made (walletAddress, lowercase, as
    // login derived it): deriving it again is a
    // scalar multiplication on secp256k1 (0.1 s of every command's start-up on a cold process).
    const address = knownAddress(account) ?? walletAddress(parseWalletKey(account.walletKey))
    credentials.sessionToken = renewingToken(service, address, options.tokenTtlSeconds ?? DEFAULT_EMBEDDED_TOKEN_TTL_SECONDS)
    user = address
    return { service, clients, address, credentials: { apiKey: () => credentials.apiKey, sessionToken: () => credentials.sessionToken?.() } }
  } catch (err) {
    await clients.close()
    await service.stop()
    throw err
  }
}
