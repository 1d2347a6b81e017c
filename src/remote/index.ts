/**
 * Clients for every part of the service over one HTTP core: deals and API keys, the uploads
 * listing, IPNS names, pointers, uploads, and verified gateway fetches.
 */
import { HttpClient, type HttpClientInit } from './http-client.js'
import { DealsClient } from './deals-client.js'
import { listFiles, type ListFilesOptions } from './files-client.js'
import { NamesClient } from './names-client.js'
import { PointersClient } from './pointers-client.js'
import { UploadClient, type UploadOptions } from './upload-client.js'
import type { CarUploadOptions, CarImported } from './car-import-client.js'
import { ServiceObjectStore } from './service-store.js'
import type { ObjectStore } from '../store/index.js'
import { GatewayClient } from './gateway-client.js'
import { SessionClient } from './session-client.js'
import type { FileRecord } from './schemas.js'

export { HttpClient } from './http-client.js'
export type { HttpClientInit, HttpRequest, HttpResponse } from './http-client.js'
export { DealsClient } from './deals-client.js'
export type { Deal, CallOptions } from './deals-client.js'
export { epochAt, epochTime, MAINNET_GENESIS_MS } from './chain-epoch.js'
export { listFiles } from './files-client.js'
export type { ListFilesOptions } from './files-client.js'
export { NamesClient } from './names-client.js'
export { PointersClient } from './pointers-client.js'
export type { PointerInput } from './pointers-client.js'
export { UploadClient, addQuery } from './upload-client.js'
export type { UploadOptions } from './upload-client.js'
export { ServiceObjectStore, fetchOptions, uploadOptions, uploadTime } from './service-store.js'
export type { CarImported } from './car-import-client.js'
export { GatewayClient } from './gateway-client.js'
export { SessionClient } from './session-client.js'
export { checkedCid, canonicalCid, isCanonicalCid, cidSchema } from './cid-text.js'
export type { CidText } from './cid-text.js'
export type { FetchOptions, GatewayLimits } from './gateway-client.js'
export type { ResolvedName } from './name-resolver.js'
export type { BlockSink } from './rebuilt-blocks.js'
export type { FileRecord, Pointer } from './schemas.js'
export { pointerAnswerSchema } from './schemas.js'
export { DEFAULT_RETRY_POLICY } from './retry.js'
export { ANSWER_LIMITS } from './body.js'
export type { RetryPolicy } from './retry.js'

/** Where each part of the service answers. */
export interface ServiceEndpoints {
  readonly dealUrl: string
  readonly apiUrl: string
  readonly pointerUrl: string
  readonly uploadUrl: string
  readonly gateways: readonly string[]
}

/** The credentials, read at each request so renewed ones apply at once. */
export interface ServiceCredentials {
  readonly apiKey: () => string | undefined
  readonly sessionToken: () => string | undefined
}

/** The pointer service as a client reads it: a pointer answered with all the service says of it. */
export type ServicePointers = Pick<PointersClient, 'current' | 'put'>

export interface ServiceClients {
  readonly deals: DealsClient
  readonly names: NamesClient
  readonly pointers: ServicePointers
  /** The objects: put, read verified, list, delete (see `ObjectStore`'s guarantees). */
  readonly objects: ObjectStore
  /** Sends a CAR to the service's `dag/import` (the caller checked its blocks). */
  readonly importCar: (path: string, options?: UploadOptions & Pick<CarUploadOptions, 'part' | 'pinRoots'>) => Promise<CarImported>
  /** IPNS names resolved through the gateways (objects are read through `objects`). */
  readonly gateway: GatewayClient
  /** Session tokens for a wallet's signature (a self-hosted service's; production's are a 404). */
  readonly session: SessionClient
  files: (options?: ListFilesOptions) => AsyncGenerator<FileRecord>
  close: () => Promise<void>
}

/** A whole upload, the body sent and the service's import of it answered. */
const UPLOAD_DEADLINE_MS = 60 * 60_000

/**
 * What a 401 or 403 tells the user to do, for a credential refused (sent, and not taken: wrong,
 * expired) and for one missing (none set, so nothing was sent). A mirror has its own: the
 * primary's variables and files never reach it (connect/mirrors.ts).
 */
export interface CredentialHints {
  readonly apiKey: { readonly refused: string, readonly missing: string }
  readonly sessionToken: { readonly refused: string, readonly missing: string }
}

const SESSION_SOURCE = 'copy one from the dashboard into the file session-token beside the config (0600), or set CIDSYNC_SESSION_TOKEN ' +
  '(self-hosted: `cidsync login --wallet-key-file F` gets one for your wallet; or `cidsync local-service token --dir D --user U`, D being the running service\'s directory)'

/** The primary's: `cidsync login`, the files beside the config, `CIDSYNC_*`. */
export const PRIMARY_CREDENTIAL_HINTS: CredentialHints = {
  apiKey: {
    refused: 'the API key was refused: run `cidsync login`, or set CIDSYNC_API_KEY',
    missing: 'no API key is set: run `cidsync login` with your wallet key (`--wallet-key-file F`), or set CIDSYNC_API_KEY'
  },
  sessionToken: {
    refused: 'the session token was refused or has expired: copy a new one from the dashboard into the file session-token beside the config (0600), or set CIDSYNC_SESSION_TOKEN ' +
      '(self-hosted: `cidsync login --wallet-key-file F` gets one for your wallet; or `cidsync local-service token --dir D --user U`, D being the running service\'s directory)',
    missing: `no session token is set: ${SESSION_SOURCE}`
  }
}

export interface ServiceLimits {
  /** The most a gateway fetch may write to disk when the caller knows no size (default 4 GiB). */
  readonly maxFetchBytes?: number
  /** What a refused or missing credential says to do (default {@link PRIMARY_CREDENTIAL_HINTS}). */
  readonly hints?: CredentialHints
  /**
   * The objects as the caller keeps them, given the service's over HTTP: the embedded service
   * reads and adds in this process (connect/embedded-store.ts).
   */
  readonly objects?: (overHttp: ServiceObjectStore) => ObjectStore
  /** The pointers as the caller keeps them, given the service's over HTTP: the embedded service's in this process. */
  readonly pointers?: (overHttp: ServicePointers) => ServicePointers
}

/** One HTTP core per base URL, each client on the one it talks to. */
export function createServiceClients (endpoints: ServiceEndpoints, credentials: ServiceCredentials, options: Partial<HttpClientInit> & ServiceLimits = {}): ServiceClients {
  const { maxFetchBytes, hints = PRIMARY_CREDENTIAL_HINTS, objects, pointers, ...init } = options
  const make = (service: string, baseUrl: string, credential?: () => string | undefined, hint?: CredentialHints['apiKey'], extra: Partial<HttpClientInit> = {}): HttpClient =>
    new HttpClient({ ...init, ...extra, service, baseUrl, credential, unauthorizedHint: hint?.refused, missingHint: hint?.missing })
  const deal = make('deal service', endpoints.dealUrl, credentials.apiKey, hints.apiKey)
  const api = make('main API', endpoints.apiUrl, credentials.apiKey, hints.apiKey)
  const pointer = make('pointer service', endpoints.pointerUrl, credentials.sessionToken, hints.sessionToken)
  // A large upload is answered only once the service has imported it all.
  const upload = make('upload endpoint', endpoints.uploadUrl, credentials.apiKey, hints.apiKey, { headersTimeoutMs: 10 * 60_000, deadlineMs: UPLOAD_DEADLINE_MS })
  const gateways = endpoints.gateways.map(url => make('gateway', url))
  const all = [deal, api, pointer, upload, ...gateways]
  const uploads = new UploadClient(upload)
  const gateway = new GatewayClient(gateways, { maxBytes: maxFetchBytes })
  const overHttp = new ServiceObjectStore(uploads, gateway, api, `the service at ${endpoints.uploadUrl}`)
  return {
    deals: new DealsClient({ deal, api }),
    names: new NamesClient(api),
    pointers: pointers?.(new PointersClient(pointer)) ?? new PointersClient(pointer),
    objects: objects?.(overHttp) ?? overHttp,
    importCar: async (path, options) => await uploads.importCar(path, options),
    gateway,
    session: new SessionClient(pointer),
    files: (options) => listFiles(api, options),
    close: async () => { await Promise.all(all.map(async c => { await c.close() })) }
  }
}
