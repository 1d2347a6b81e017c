import { timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import type { CID } from 'multiformats/cid'
import { AccountLimits, policyFor, type AccountPolicy, type SignupPolicy } from './account-policy.js'
import { BlockStore } from './blocks.js'
import { capConnections } from './connection-cap.js'
import { DEFAULT_BODY_RATE, guardBodyRate, type BodyRate } from './body-rate.js'
import { Faults, loseAnswer, type FaultInput } from './faults.js'
import { HttpFailure, sendJson, type Caller, type Route } from './http.js'
import { isKuboRpcPath, kuboErrorBody } from './kubo-error.js'
import type { ServiceParts } from './parts.js'
import { settingOr } from './store.js'
import { DEFAULT_SESSION_TOKEN_TTL_SECONDS, TokenIssuer } from './tokens.js'
import { adminRoutes, type RequestRecord } from './routes/admin.js'
import { ADMIN_TOKEN_FILE, adminHosts, checkAdminRequest, ensureAdminToken } from './admin-guard.js'
import { HostGuard } from './host-guard.js'
import { authRoutes, bearerToken, UNAUTHORIZED_MESSAGE } from './routes/auth.js'
import { catRoutes } from './routes/cat.js'
import { dagImportRoutes } from './routes/dag-import.js'
import { dealRoutes } from './routes/deals.js'
import { fileRoutes } from './routes/files.js'
import { gatewayRoutes } from './routes/gateway.js'
import { CAR_LIMITS, type CarLimits } from './routes/gateway-car.js'
import { ipnsRoutes } from './routes/ipns.js'
import { pointerRoutes, pointerTable, type PointerTable } from './routes/pointers.js'
import { routingIpnsRoutes } from './routes/routing-ipns.js'
import { uploadRoutes } from './routes/upload.js'
import { uploadsInProcess, type DeleteWalk, type ListedUpload } from './uploads-in-process.js'
import { InternalError } from '../errors.js'
import { inProcessAdder, type InProcessAdd, type InProcessAdded } from './add-in-process.js'
import { reclaimDue, type ReclaimOptions, type ReclaimResult } from './reclaim.js'
import { ServiceReclaims } from './reclaim-runs.js'
import { UploadGate } from './upload-gate.js'
import { accountReads, type AccountReads, type PointerRow } from './reads/index.js'

export const DEFAULT_PAGE_SIZE = 2000
/** Production takes up to two days; locally a deal appears after this. */
export const DEFAULT_DEAL_DELAY_MS = 5_000
export const DEFAULT_AUTH_MESSAGE_TTL_MS = 5 * 60_000
export const DEFAULT_REQUEST_LOG = 10_000

export interface LocalServiceInit {
  /** Where its database and blocks live. */
  readonly dir: string
  readonly host?: string
  /** 0 (the default) picks a free port. */
  readonly port?: number
  readonly pageSize?: number
  readonly dealDelayMs?: number
  readonly authMessageTtlMs?: number
  /** The time in ms, for the sign-in messages' lifetime (`Date.now` unless a test moves it on). */
  readonly now?: () => number
  readonly faults?: Readonly<Record<string, FaultInput>>
  /**
   * Serve the admin routes (`/local/...`: session tokens, faults, seeding, the request log),
   * guarded by the admin token kept in `dir`. Off by default: without it they do not exist.
   */
  readonly admin?: boolean
  /**
   * When set, every request but the admin routes must carry it in `X-Cidsync-Access`, or is
   * refused (403): the embedded service answers only the process that started it, not every
   * local user who finds its loopback port.
   */
  readonly accessKey?: string
  /**
   * Who may sign up, and what each account may hold (default: no limits). Without a `signup`,
   * open on a loopback `host` and closed on any other ({@link defaultSignup}).
   */
  readonly policy?: AccountPolicy
  /** The most connections it holds at once (default 128; past it the oldest idle one is closed). */
  readonly maxConnections?: number
  /** Bounds of a gateway CAR response's DAG walk (default {@link CAR_LIMITS}). */
  readonly carLimits?: Partial<CarLimits>
  /**
   * `Host` values it answers besides its own loopback address (what a reverse proxy in front of
   * it sends), when it listens on loopback ({@link HostGuard}).
   */
  readonly hosts?: readonly string[]
  /** The slowest a request body may arrive (default {@link DEFAULT_BODY_RATE}); slower, its connection is cut. */
  readonly bodyRate?: Partial<BodyRate>
  /**
   * Reclaim the space of deleted uploads on its own, this long after the last delete (each delete
   * moves it on; failures are tried again later). Unset: only when asked ({@link LocalService.reclaim}).
   */
  readonly reclaimAfterDeleteMs?: number
  /** Where it says what it did on its own (a reclaim's result, or why it failed). */
  readonly log?: (line: string) => void
}

/** The header that carries {@link LocalServiceInit.accessKey}. */
export const ACCESS_HEADER = 'x-cidsync-access'

function sameKey (given: string | string[] | undefined, key: string): boolean {
  const a = Buffer.from(typeof given === 'string' ? given : '')
  const b = Buffer.from(key)
  return a.byteLength === b.byteLength && timingSafeEqual(a, b)
}

/**
 * The whole service on one loopback HTTP server: deal service, main API, pointer service, upload
 * endpoint and gateway, each under the paths production uses, persisted under `dir`.
 */
export class LocalService {
  readonly faults = new Faults()
  private readonly parts: ServiceParts
  private readonly routes: Route[]
  private readonly server: Server
  private readonly requests: RequestRecord[] = []
  private readonly apiKeyOwner: Database.Statement
  private readonly accounts: AccountReads
  private readonly pointers: PointerTable
  private readonly uploads: ReturnType<typeof uploadsInProcess>
  private readonly adminToken: string | undefined
  private adminHostNames: ReadonlySet<string> = new Set()
  private hostGuard: HostGuard | undefined
  private readonly adder: (request: InProcessAdd, address: string) => Promise<InProcessAdded>
  private readonly reclaims: ServiceReclaims

  /** `db`: the service's database, opened by `openServiceDatabase` (store.ts); closed by {@link stop}. */
  constructor (private readonly init: LocalServiceInit, private readonly db: Database.Database) {
    const tokens = new TokenIssuer(Buffer.from(settingOr(this.db, 'token_secret', TokenIssuer.newSecret), 'base64url'))
    const blocks = new BlockStore(init.dir, this.db)
    const gate = new UploadGate(init.dir, this.db)
    this.reclaims = new ServiceReclaims({ dir: init.dir, db: this.db, blocks, gate }, init.reclaimAfterDeleteMs, init.log ?? (() => {}))
    this.parts = {
      db: this.db,
      blocks,
      gate,
      deleted: () => { this.reclaims.deleted() },
      tokens,
      pageSize: init.pageSize ?? DEFAULT_PAGE_SIZE,
      dealDelayMs: init.dealDelayMs ?? DEFAULT_DEAL_DELAY_MS,
      authMessageTtlMs: init.authMessageTtlMs ?? DEFAULT_AUTH_MESSAGE_TTL_MS,
      now: init.now ?? Date.now,
      limits: new AccountLimits(this.db, policyFor(init.policy, init.host ?? '127.0.0.1')),
      carLimits: { ...CAR_LIMITS, ...init.carLimits }
    }
    for (const [route, fault] of Object.entries(init.faults ?? {})) this.faults.set(route, fault)
    this.apiKeyOwner = this.db.prepare('SELECT address FROM api_keys WHERE key = ?').pluck()
    this.accounts = accountReads(this.db)
    this.pointers = pointerTable(this.db)
    this.uploads = uploadsInProcess(this.db, () => { this.reclaims.deleted() })
    this.routes = [
      ...authRoutes(this.parts), ...dealRoutes(this.parts), ...fileRoutes(this.parts), ...ipnsRoutes(this.parts),
      ...pointerRoutes(this.parts, this.pointers), ...uploadRoutes(this.parts), ...dagImportRoutes(this.parts), ...catRoutes(this.parts), ...gatewayRoutes(this.parts),
      ...routingIpnsRoutes(this.parts),
      ...(init.admin === true ? adminRoutes(this.parts, this.faults, () => this.requests, async () => await this.reclaim()) : [])
    ]
    this.adminToken = init.admin === true ? ensureAdminToken(init.dir) : undefined
    this.adder = inProcessAdder(this.parts)
    this.server = createServer({ connectionsCheckingInterval: 1_000 }, (req, res) => { void this.handle(req, res) })
    this.server.requestTimeout = 0 // uploads of many GB take long; idle sockets still time out
    capConnections(this.server, init.maxConnections)
  }

  /** Who may make an account, as decided at start (the policy's, or the default for its address). */
  get signup (): SignupPolicy {
    return this.parts.limits.policy.signup
  }

  /** The base URL every client uses (all parts of the service share it). */
  get url (): string {
    const address = this.server.address() as AddressInfo | null
    if (address === null) throw new InternalError('the local service is not listening')
    return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
  }

  async start (): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(this.init.port ?? 0, this.init.host ?? '127.0.0.1', () => { this.server.off('error', reject); resolve() })
    })
    const address = this.server.address() as AddressInfo
    this.adminHostNames = adminHosts(address.address, address.port)
    this.hostGuard = new HostGuard(address.address, address.port, this.init.hosts ?? [])
    // Deletes a stop or a kill left unreclaimed, or a reclaim one cut short.
    if (reclaimDue(this.db)) this.reclaims.deleted()
    return this.url
  }

  async stop (): Promise<void> {
    if (this.server.listening) {
      const closed = new Promise<void>(resolve => this.server.close(() => resolve()))
      this.server.closeAllConnections()
      await closed
    }
    await this.reclaims.stop()
    if (this.db.open) {
      this.parts.blocks.close()
      this.parts.gate.close()
      this.db.close()
    }
  }

  /**
   * Gives back the space of blocks no live upload, pointer or IPNS name holds (reclaim.ts): dead
   * blocks dropped, packs mostly dead rewritten and their files removed, deleted uploads no
   * longer counted against their quota. Uploads and reads go on meanwhile. Fails with
   * `ServiceReclaimBusyError` while another process reclaims this data dir.
   */
  async reclaim (options: ReclaimOptions = {}): Promise<ReclaimResult> {
    if (!this.db.open) throw new HttpFailure(503, 'the service is stopping')
    return await this.reclaims.run(options)
  }

  /** Whether no reclaim of its own is due or under way (see {@link LocalServiceInit.reclaimAfterDeleteMs}). */
  get reclaimIdle (): boolean {
    return this.reclaims.idle
  }

  /** An invitation code for `signup = "invite"`: it lets one new wallet make an account, once. */
  invite (ttlSeconds?: number): string {
    return this.parts.limits.signups.invitations.make(ttlSeconds)
  }

  /** A session token for the pointer service, as an identity provider would issue one. */
  issueToken (user: string, ttlSeconds = DEFAULT_SESSION_TOKEN_TTL_SECONDS): string {
    return this.parts.tokens.issue(user, ttlSeconds)
  }

  /**
   * A stored block's bytes read in this process, without HTTP (an export of the embedded
   * service): as stored, unchecked (the caller hashes them against `cid`); undefined when not stored.
   * Given `into`, a block that fits is read into it (a view of it answered): an export reuses a
   * few buffers instead of a new one a block (whose freeing made V8 mark the whole heap again and again).
   */
  async readStoredBlock (cid: CID, into?: Uint8Array): Promise<Uint8Array | undefined> {
    // One index lookup, not has() then get(): this is the export's and the restore's hot path.
    return await this.parts.blocks.get(cid, into).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw err
    })
  }

  /**
   * Several stored blocks read in this process at once ({@link readStoredBlock} for a run of a
   * file's leaves): read into `into` as far as it holds them, neighbours in a pack with one read,
   * each answered as a view; undefined for a block not stored. As stored, unchecked.
   */
  async readStoredBlocks (cids: readonly CID[], into: Uint8Array): Promise<Array<Uint8Array | undefined>> {
    return await this.parts.blocks.getRun(cids, into)
  }

  /**
   * Which of `cids` the account of `apiKey` lists, read in this process without HTTP (the embedded
   * service's own reads): one pass over its uploads, keeping only those asked. Undefined for a key
   * it does not know.
   */
  heldFiles (apiKey: string, cids: ReadonlySet<string>): Set<string> | undefined {
    if (!this.db.open) throw new HttpFailure(503, 'the service is stopping')
    return this.accounts.heldFiles(apiKey, cids)
  }

  /**
   * `user`'s pointer for the pair, read in this process as the pointer route reads it: null where
   * none was put (the route's 404), undefined once the service is stopping.
   */
  pointer (user: string, namespace: string, network: string): PointerRow | null | undefined {
    return this.db.open ? this.pointers.current(user, namespace, network) ?? null : undefined
  }

  /**
   * Overwrites `user`'s pointer in this process, as the pointer route does. Undefined where the
   * route would refuse it (or the service is stopping): its refusal is an answer over HTTP.
   */
  putPointer (user: string, body: unknown): PointerRow | undefined {
    if (!this.db.open) return undefined
    try {
      return this.pointers.put(user, body)
    } catch (err) {
      if (err instanceof HttpFailure) return undefined
      throw err
    }
  }

  /**
   * A page of the account's uploads, newest first, read in this process as `files_uploaded`
   * answers it (`beforeSeq`: where the last page ended). Undefined for a key it does not know.
   */
  listUploads (apiKey: string, beforeSeq: number | undefined): { uploads: ListedUpload[], lastSeq: number | undefined } | undefined {
    if (!this.db.open) throw new HttpFailure(503, 'the service is stopping')
    const address = this.apiKeyOwner.get(apiKey) as string | undefined
    return address === undefined ? undefined : this.uploads.page(address, beforeSeq)
  }

  /** The account's newest upload of `cid`, read in this process; null for none, undefined for a key it does not know. */
  newestUpload (apiKey: string, cid: string): ListedUpload | null | undefined {
    if (!this.db.open) throw new HttpFailure(503, 'the service is stopping')
    const address = this.apiKeyOwner.get(apiKey) as string | undefined
    return address === undefined ? undefined : this.uploads.newest(address, cid) ?? null
  }

  /**
   * Deletes the account's uploads of `cids` in this process, as `delete_file` would one by one, in
   * one transaction; answers the objects no longer listed. Undefined for a key it does not know.
   */
  deleteUploads (apiKey: string, cids: readonly string[], walk: DeleteWalk): string[] | undefined {
    if (!this.db.open) throw new HttpFailure(503, 'the service is stopping')
    const address = this.apiKeyOwner.get(apiKey) as string | undefined
    return address === undefined ? undefined : this.uploads.remove(address, cids, walk)
  }

  /**
   * A file added for the process this service runs in, as `POST /api/v0/add` adds one (quota,
   * durable before answered, listed for the owner of `request.apiKey`) but without HTTP: the embedded
   * service's own uploads. Throws the route's `HttpFailure` (413 past the quota, 503 after a
   * failed fsync) or the error that stopped it. Faults set for the `upload` route apply (their
   * latency and errors; a reset has no connection to cut here).
   */
  async addFile (request: InProcessAdd): Promise<InProcessAdded> {
    if (!this.db.open) throw new HttpFailure(503, 'the service is stopping')
    const fault = this.faults.take('upload')
    if (fault !== undefined && fault.latencyMs > 0) await new Promise(resolve => setTimeout(resolve, fault.latencyMs).unref())
    if (fault !== undefined && Math.random() < fault.errorRate) throw new HttpFailure(fault.status, 'injected fault')
    const address = this.apiKeyOwner.get(request.apiKey) as string | undefined
    if (address === undefined) throw new HttpFailure(401, UNAUTHORIZED_MESSAGE['api-key'])
    return await this.adder(request, address)
  }

  /** Where the admin token is, when the admin routes are served. */
  get adminTokenPath (): string | undefined {
    return this.adminToken === undefined ? undefined : join(this.init.dir, ADMIN_TOKEN_FILE)
  }

  /** What it was asked, newest last (bounded). */
  requestLog (): readonly RequestRecord[] {
    return this.requests
  }

  private async handle (req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    const matches = this.routes.map(route => ({ route, params: this.match(route, url.pathname) })).filter(m => m.params !== undefined)
    const found = matches.find(m => m.route.methods.includes(req.method ?? ''))
    const name = found?.route.name ?? (matches[0]?.route.name ?? 'unknown')
    res.on('finish', () => this.log({ at: Date.now(), method: req.method ?? '', path: url.pathname, route: name, status: res.statusCode }))
    try {
      if (found === undefined) {
        if (matches.length > 0) res.setHeader('allow', [...new Set(matches.flatMap(m => m.route.methods))].join(', '))
        throw new HttpFailure(matches.length > 0 ? 405 : 404, matches.length > 0 ? `method ${req.method ?? ''} not allowed` : `not found: ${url.pathname}`)
      }
      // Admin routes are checked first and never faulted: a fault rule must not lock out the route that clears it.
      if (found.route.auth === 'admin') checkAdminRequest(req, this.adminHostNames, this.adminToken ?? '')
      else {
        this.hostGuard?.check(req, url.pathname)
        if (this.init.accessKey !== undefined && !sameKey(req.headers[ACCESS_HEADER], this.init.accessKey)) {
          throw new HttpFailure(403, 'this service answers only the cidsync process that started it')
        }
      }
      const fault = found.route.auth === 'admin' ? undefined : this.faults.take(found.route.name)
      // Unref'd: an injected delay must not keep a stopping process alive.
      if (fault !== undefined && fault.latencyMs > 0) await new Promise(resolve => setTimeout(resolve, fault.latencyMs).unref())
      if (fault !== undefined && Math.random() < fault.resetRate) { req.socket.destroy(); return }
      if (fault !== undefined && Math.random() < fault.resetAfterRate) loseAnswer(req, res)
      if (fault !== undefined && Math.random() < fault.errorRate) {
        if (fault.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(fault.retryAfterSeconds))
        throw new HttpFailure(fault.status, 'injected fault')
      }
      const caller = this.authenticate(req, found.route.auth)
      // From when the route reads the body: an injected latency is the service's stall, not the sender's.
      if (!req.complete) res.once('close', guardBodyRate(req, { ...DEFAULT_BODY_RATE, ...this.init.bodyRate }))
      await found.route.handle({ req, res, url, params: found.params as string[], caller, fault })
    } catch (err) {
      if (res.headersSent) { res.destroy(); return }
      const kubo = isKuboRpcPath(url.pathname)
      if (err instanceof HttpFailure) {
        for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value)
        sendJson(res, err.status, kubo ? kuboErrorBody(err.status, err.message, err.message) : { error: err.message })
      } else {
        const error = [{ message: 'Something went wrong.' }]
        sendJson(res, 500, kubo ? kuboErrorBody(500, 'Something went wrong.', error) : { error })
      }
    }
  }

  private match (route: Route, path: string): string[] | undefined {
    if (typeof route.path === 'string') return route.path === path ? [] : undefined
    const m = route.path.exec(path)
    if (m === null) return undefined
    try {
      return m.slice(1).map(p => decodeURIComponent(p))
    } catch {
      return m.slice(1) // malformed escapes stay as sent; the route refuses them as an invalid CID
    }
  }

  private authenticate (req: IncomingMessage, auth: Route['auth']): Caller {
    if (auth === 'none' || auth === 'admin') return { address: '' }
    const token = bearerToken(req.headers.authorization)
    if (token === undefined && auth === 'api-key-optional') return { address: '' }
    const scheme = auth === 'session' ? 'session' : 'api-key'
    const address = token === undefined ? undefined : scheme === 'api-key' ? this.apiKeyOwner.get(token) as string | undefined : this.parts.tokens.verify(token)
    if (address === undefined) throw new HttpFailure(401, UNAUTHORIZED_MESSAGE[scheme])
    return { address }
  }

  private log (record: RequestRecord): void {
    this.requests.push(record)
    if (this.requests.length > DEFAULT_REQUEST_LOG) this.requests.splice(0, this.requests.length - DEFAULT_REQUEST_LOG)
  }
}
