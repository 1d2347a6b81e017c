/**
 * Reaching the service the config names: the embedded local service (started in-process and
 * signed in to), or the remote one with credentials from the environment, systemd or files.
 * The one place besides the CLI that starts the local service.
 */
// Registers the backends cidsync ships before any mirror is reached.
import './backends.js'
import type { Config } from '../config/index.js'
import type { ObjectHome } from '../store/index.js'
import type { ReclaimOptions, ReclaimResult } from '../local-service/index.js'
import { createServiceClients, type ServiceClients } from '../remote/index.js'
import { Credential, credentialsDir } from './credentials.js'
import { embeddedOptions } from './embedded-options.js'
import { openEmbeddedReads, type OpenedHome } from './embedded-reads.js'
import { TokenRenewal } from './token-renewal.js'

export { Credential, credentialsDir } from './credentials.js'
export type { CredentialName } from './credentials.js'
export { TokenRenewal, TOKEN_WARNING_DAYS, RENEWED_TOKEN_FILE, RENEWAL_BACKOFF } from './token-renewal.js'
export type { RenewalState, TokenRenewalInit } from './token-renewal.js'
export { DEFAULT_EMBEDDED_TOKEN_TTL_SECONDS } from './embedded-options.js'
export { EmbeddedObjectStore } from './embedded-store.js'
export { embeddedAccountAddress, rememberEmbeddedAccount } from './embedded-account.js'
export { heldAmongOf } from './embedded-lazy-store.js'
export type { OpenedHome } from './embedded-reads.js'
export type { LocalReads } from './embedded-store.js'
export { connectMirror, connectMirrors, findMirror, mirrorCredentialsDir, saveMirrorCredentials } from './mirrors.js'
export { primaryWallet, savePrimaryWallet } from './wallet-address.js'
export type { MirrorConnection, MirrorClients } from './mirrors.js'
export { serviceBackend } from './service-backend.js'
export { embeddedBackend } from './embedded-backend.js'

export interface ServiceConnection {
  readonly mode: 'embedded' | 'remote'
  readonly clients: ServiceClients
  /** The credentials as they are now (read again at each call). */
  readonly credentials: { readonly apiKey: () => string | undefined, readonly sessionToken: () => string | undefined }
  /** A remote service's session token, renewed with the kept wallet key (the daemon runs it). */
  readonly renewal?: TokenRenewal
  /** Base URLs, for messages: the embedded service's own, or the config's. */
  readonly describe: string
  /**
   * The embedded service's space reclaim (after a prune deleted uploads); a remote service
   * reclaims on its own, so it has none.
   */
  readonly reclaim?: (options?: ReclaimOptions) => Promise<ReclaimResult>
  /** Whether the embedded service has space to reclaim (deleted uploads, or a reclaim cut short). */
  readonly reclaimDue?: () => Promise<boolean>
  close: () => Promise<void>
}

/**
 * `options.storing`: the caller stores content (the daemon with a storing folder, `cidsync
 * snapshot`): an embedded service then runs in a thread of its own (connect/embedded.ts says why),
 * and its description says so.
 */
export async function connectService (config: Config, env: NodeJS.ProcessEnv = process.env, options: { readonly storing?: boolean } = {}): Promise<ServiceConnection> {
  if (config.service.mode === 'embedded') {
    const [{ startEmbedded }, { reclaimDueIn }, { checkEmbeddedAccount, rememberEmbeddedAccount }] = await Promise.all([import('./embedded.js'), import('../local-service/index.js'), import('./embedded-account.js')])
    const found = checkEmbeddedAccount(config.stateDir, config.service.dir)
    const embedded = await startEmbedded(config.service.dir, { ...embeddedOptions(env), thread: options.storing === true })
    if (found.address !== undefined && found.remembered === undefined) {
      // Noted once the account there holds this namespace's pointer: one a command made in an
      // empty mount point, or in the default dir before `[service] dir` was set, never is.
      const used = await embedded.clients.pointers.current(config.namespace, config.network).then(() => true, () => false)
      if (used) rememberEmbeddedAccount(config.stateDir, found.address)
    }
    return {
      mode: 'embedded',
      clients: embedded.clients,
      credentials: embedded.credentials,
      describe: `the embedded service at ${embedded.service.url} (data in ${config.service.dir}` +
        (options.storing === true ? '; in a thread of its own' : '') +
        (embedded.service.adminTokenPath === undefined ? ')' : `; admin routes on, token in ${embedded.service.adminTokenPath})`),
      reclaim: async (reclaimOptions) => await embedded.service.reclaim(reclaimOptions),
      reclaimDue: async () => await reclaimDueIn(config.service.dir),
      close: async () => { await embedded.clients.close(); await embedded.service.stop() }
    }
  }
  const dir = credentialsDir(config, env)
  const apiKey = new Credential('api-key', dir, env)
  const sessionToken = new Credential('session-token', dir, env)
  const walletKey = new Credential('wallet-key', dir, env)
  const { dealUrl, apiUrl, pointerUrl, uploadUrl, gateways } = config.service
  const renewal = new TokenRenewal({
    configured: () => sessionToken.value(),
    walletKey: () => walletKey.value(),
    stateDir: config.stateDir,
    request: async (key, expiresAfter, signal) => await clients.session.tokenBySignature(key, { expiresAfter, signal })
  })
  const credentials = { apiKey: () => apiKey.value(), sessionToken: () => renewal.current() }
  const clients = createServiceClients({ dealUrl, apiUrl, pointerUrl, uploadUrl, gateways }, credentials)
  return { mode: 'remote', clients, credentials, renewal, describe: `the service at ${dealUrl}`, close: async () => { await clients.close() } }
}

/**
 * The primary as a read of the history needs it (`history`, `find --at`, `log`): the service the
 * config names, as {@link connectService} reaches it. The embedded one is not started for what
 * its database answers in this process (connect/embedded-reads.ts): the first other call starts it.
 */
export async function connectReads (config: Config, env: NodeJS.ProcessEnv = process.env): Promise<OpenedHome<ObjectHome>> {
  const connect = async (): Promise<OpenedHome<ServiceClients>> => {
    const connection = await connectService(config, env)
    return { home: connection.clients, close: connection.close }
  }
  if (config.service.mode === 'embedded') {
    // Its own account, before anything is read there: another account's history is not this one's.
    const { checkEmbeddedAccount } = await import('./embedded-account.js')
    checkEmbeddedAccount(config.stateDir, config.service.dir)
    const reads = await openEmbeddedReads(config.service.dir, env, connect)
    if (reads !== undefined) return reads
  }
  return await connect()
}
