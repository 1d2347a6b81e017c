/**
 * Reaching the service the config names: the embedded local service (started in-process and
 * signed in to), or the remote one with credentials from the environment, systemd or files.
 * The one place besides the CLI that starts the local service.
 */
// Registers the backends cidsync ships before any mirror is reached.
import './backends.js'
import type { Config } from '../config/index.js'
import { reclaimDueIn, type ReclaimOptions, type ReclaimResult } from '../local-service/index.js'
import { createServiceClients, type ServiceClients } from '../remote/index.js'
import { Credential, credentialsDir } from './credentials.js'
import { startEmbedded } from './embedded.js'
import { embeddedOptions } from './embedded-options.js'
import { TokenRenewal } from './token-renewal.js'

export { Credential, credentialsDir } from './credentials.js'
export type { CredentialName } from './credentials.js'
export { TokenRenewal, TOKEN_WARNING_DAYS, RENEWED_TOKEN_FILE, RENEWAL_BACKOFF } from './token-renewal.js'
export type { RenewalState, TokenRenewalInit } from './token-renewal.js'
export { DEFAULT_EMBEDDED_TOKEN_TTL_SECONDS } from './embedded-options.js'
export { EmbeddedObjectStore, heldAmongOf } from './embedded-store.js'
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
    const embedded = await startEmbedded(config.service.dir, { ...embeddedOptions(env), thread: options.storing === true })
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
