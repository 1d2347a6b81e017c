import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { chmodSync, lstatSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import type { AddressInfo, Socket } from 'node:net'
import { clearStaleSocket } from './stale-socket.js'
import { formatListenAddress, type ListenAddress } from '../config/index.js'
import { exitCodeOf, ListenError, NotReadyError } from '../errors.js'
import { renderMetrics } from './metrics.js'
import { hasStatusToken } from './status-token.js'
import { CHALLENGE_PATH, ChallengeIssuer } from './status-proof.js'
import type { StatusDocument } from './status-document.js'
import { DashboardAuth } from './dashboard-auth.js'
import { handleDashboardGet, type DashboardRoutes } from './dashboard-routes.js'
import { handleFindGet } from './find-routes.js'
import { DownloadRoute, type DownloadFetcher } from './download-route.js'
import type { FindService } from '../find/index.js'
import type { EventBus } from './event-bus.js'
import { EventStreams, type EventStreamLimits } from './event-stream.js'
import { isOwnHost, isOwnOrigin, ownHosts } from '../util/own-host.js'
import { makeDirsSync } from '../util/make-dirs.js'
import { marksProblem } from '../snapshot/index.js'

export interface StatusServerComponents {
  /** Builds the document at request time. */
  readonly status: () => StatusDocument
  /**
   * `POST /snapshot`: publish now; answers what was published. `?confirmDrop=1` lets a publish
   * held for dropping many entries through; `?repairPointer=1` replaces an unusable pointer;
   * each `?keep=<label>` labels the publish, so that a forget keeps it.
   */
  readonly publishNow?: (options: { confirmDrop: boolean, repairPointer: boolean, marks: string[] }) => Promise<unknown>
  /** `POST /rescan`: the drift check now (a fresh walk compared with the index); answers what it repaired. */
  readonly rescanNow?: () => Promise<unknown>
  /** `POST /reconcile`: mirror the account now. */
  readonly reconcileNow?: () => Promise<unknown>
  /** `POST /verify`: a restore drill now (absent until the daemon has one: the POST answers 404). */
  readonly verifyNow?: () => Promise<unknown>
  /** What `GET /events` streams; without it there is no /events. */
  readonly events?: EventBus
  /** The token every POST must carry (`Authorization: Bearer`). */
  readonly token: string
  /** `/metrics` needs the token too. */
  readonly metricsNeedToken?: boolean
  /** `GET /search`, `/where`, `/log`, `/browse` (find-routes.ts); absent: they answer 503. */
  readonly find?: FindService
  /** `GET /download` (download-route.ts): fetches and verifies a stored file; absent: 503. */
  readonly download?: DownloadFetcher
}

/** The exact `Host` values the endpoint answers to (util/own-host.ts); a unix socket's: `localhost`. */
export function allowedHosts (address: ListenAddress): Set<string> {
  return address.kind === 'unix' ? new Set(['localhost']) : ownHosts(address.host, address.port)
}

function send (res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8', headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...headers })
  res.end(body)
}

const ROUTES: Record<string, (components: StatusServerComponents, res: ServerResponse) => void> = {
  '/healthz': (_c, res) => send(res, 200, 'ok\n'),
  '/status': (c, res) => send(res, 200, JSON.stringify(c.status(), null, 2) + '\n', 'application/json'),
  '/metrics': (c, res) => send(res, 200, renderMetrics(c.status()), 'text/plain; version=0.0.4; charset=utf-8')
}

/**
 * Who may POST: the state dir's token (`Authorization: Bearer`, the CLI), or a dashboard session
 * (cookie, same origin, CSRF header). `/login-code` takes the token only: a page signed in must
 * never be able to mint codes.
 */
function postRefusal (dashboard: DashboardRoutes, withToken: boolean, req: IncomingMessage, path: string): { status: number, why: string } | undefined {
  if (withToken) return undefined
  const bearerOnly = 'unauthorized: POSTs need Authorization: Bearer <the token in the state dir\'s status.token> (or the CidsyncProof the CLI sends)'
  if (path === '/login-code' || req.headers.cookie === undefined) return { status: 401, why: bearerOnly }
  const why = dashboard.auth.refusal(req)
  return why === undefined ? undefined : { status: 403, why: `forbidden: ${why}` }
}

async function handlePost (components: StatusServerComponents, dashboard: DashboardRoutes, withToken: boolean, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  const path = url.pathname
  const refused = postRefusal(dashboard, withToken, req, path)
  if (refused !== undefined) {
    send(res, refused.status, `${refused.why}\n`)
    return
  }
  if (path === '/login-code') {
    send(res, 200, JSON.stringify(dashboard.auth.issueCode()) + '\n', 'application/json')
    return
  }
  if (path === '/logout') {
    send(res, 200, '{"signedIn":false}\n', 'application/json', { 'set-cookie': dashboard.auth.end(req) })
    return
  }
  const publishNow = components.publishNow
  const flag = (name: string): boolean => ['1', 'true', 'yes'].includes(url.searchParams.get(name) ?? '')
  const marks = url.searchParams.getAll('keep')
  if ((flag('confirmDrop') || flag('repairPointer') || marks.length > 0) && !withToken) {
    send(res, 403, 'forbidden: confirming a drop, labelling a publish or repairing the pointer needs the token: run `cidsync snapshot --confirm-drop`, `cidsync snapshot --keep` or `cidsync pointer repair`\n')
    return
  }
  const marksRefused = marks.length > 0 ? marksProblem(marks) : undefined
  if (marksRefused !== undefined) {
    send(res, 400, `bad request: ${marksRefused}\n`)
    return
  }
  const run = path === '/snapshot' && publishNow !== undefined
    ? async () => await publishNow({ confirmDrop: flag('confirmDrop'), repairPointer: flag('repairPointer'), marks })
    : ({ '/reconcile': components.reconcileNow, '/rescan': components.rescanNow, '/verify': components.verifyNow } as Record<string, (() => Promise<unknown>) | undefined>)[path]
  if (run === undefined) {
    send(res, 404, `not found: POST ${path} (try /snapshot, /reconcile or /rescan)\n`)
    return
  }
  try {
    send(res, 200, JSON.stringify(await run()) + '\n', 'application/json')
  } catch (err) {
    const body = JSON.stringify({ error: (err as Error).message, code: (err as { code?: string }).code ?? null, exitCode: exitCodeOf(err) }) + '\n'
    // Not ready yet (still scanning, the service still being reached): a caller waits and asks again.
    if (err instanceof NotReadyError) send(res, 503, body, 'application/json', { 'retry-after': String(err.retryAfterSeconds) })
    else send(res, 502, body, 'application/json')
  }
}

/**
 * Whether the request holds the token: sent as `Bearer` (scripts), or proven without sending it
 * (`CidsyncProof`, the CLI: see status-proof.ts). A proof's nonce is spent here, once per request.
 */
function holdsToken (components: StatusServerComponents, challenges: ChallengeIssuer, req: IncomingMessage): boolean {
  return hasStatusToken(req.headers.authorization, components.token) ||
    challenges.verify(req.headers.authorization, req.method ?? '', req.url ?? '')
}

/** `GET /auth-challenge?client=<nonce>`: a nonce to prove the token on, and the daemon's own proof. */
function answerChallenge (challenges: ChallengeIssuer, url: URL, res: ServerResponse): void {
  const issued = challenges.issue(url.searchParams.get('client') ?? '')
  if (issued === undefined) send(res, 400, `bad request: ${CHALLENGE_PATH} needs ?client=<16 to 128 base64url characters>\n`)
  else send(res, 200, JSON.stringify(issued) + '\n', 'application/json')
}

function handle (components: StatusServerComponents, dashboard: DashboardRoutes, challenges: ChallengeIssuer, allowed: ReadonlySet<string>, downloads: DownloadRoute, req: IncomingMessage, res: ServerResponse): void {
  if (!isOwnHost(req.headers.host, allowed)) {
    // On a unix socket the only host allowed is localhost: `curl --unix-socket S http://localhost/status`.
    send(res, 403, allowed.has('localhost') && allowed.size === 1
      ? 'forbidden: on its unix socket the status endpoint answers only to Host: localhost (curl --unix-socket PATH http://localhost/status)\n'
      : 'forbidden: the status endpoint answers only to its own loopback address and port\n')
    return
  }
  if (!isOwnOrigin(req.headers.origin, allowed)) {
    send(res, 403, 'forbidden: requests from web pages are refused\n')
    return
  }
  const url = new URL(req.url ?? '/', 'http://localhost')
  const path = url.pathname
  if (path === CHALLENGE_PATH && req.method === 'GET') {
    answerChallenge(challenges, url, res)
    return
  }
  const withToken = req.headers.authorization !== undefined && holdsToken(components, challenges, req)
  if (path === '/metrics' && components.metricsNeedToken === true && !withToken) {
    send(res, 401, 'unauthorized: /metrics needs Authorization: Bearer <the token in status.token> ([status] metrics_token = true)\n')
    return
  }
  if (req.method === 'POST') {
    void handlePost(components, dashboard, withToken, req, res, url)
    return
  }
  if ((req.method === 'GET' || req.method === 'HEAD') && handleDashboardGet(dashboard, req, res, url)) return
  if (handleFindGet(components.find, dashboard, components.token, req, res, url)) return
  if (downloads.handle(dashboard, components.token, req, res, url)) return
  const route = ROUTES[path]
  if (route === undefined) {
    send(res, 404, `not found: ${path} (try /, /status, /events, /healthz, /metrics, or with the token /search, /where, /log, /browse, /download)\n`)
    return
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, 405, `method not allowed: ${req.method ?? ''} ${path}\n`, undefined, { allow: 'GET, HEAD' })
    return
  }
  try {
    route(components, res)
  } catch (err) {
    send(res, 500, `internal error: ${(err as Error).message}\n`)
  }
}

/** How many connections the endpoint holds at once, and how long an idle one may stay. */
export interface StatusServerLimits {
  readonly maxConnections?: number
  readonly idleTimeoutMs?: number
  readonly events?: EventStreamLimits
  /** How long a download's client may take none of the file (download-route.ts). */
  readonly downloadStallMs?: number
}

export const DEFAULT_STATUS_MAX_CONNECTIONS = 64
export const DEFAULT_STATUS_IDLE_TIMEOUT_MS = 10_000

/**
 * The status endpoint, listening on loopback TCP or a unix socket. Any local user can connect, so
 * what it holds is bounded: past `maxConnections` the oldest connection not in a request is closed
 * to make room (a real request still gets in while thousands of idle ones are held open), or the
 * new one when every connection is busy; idle and slow connections are closed after a timeout.
 */
export class StatusServer {
  private readonly server: Server
  private bound: ListenAddress | undefined
  private allowed: ReadonlySet<string> = new Set()
  /** Open connections, oldest first, with how many requests each is in. */
  private readonly sockets = new Map<Socket, { busy: number }>()
  private readonly maxConnections: number
  private readonly idleTimeoutMs: number
  private readonly dashboard: DashboardRoutes
  private readonly downloads: DownloadRoute

  constructor (components: StatusServerComponents, limits: StatusServerLimits = {}) {
    this.downloads = new DownloadRoute(components.download, limits.downloadStallMs)
    this.maxConnections = limits.maxConnections ?? DEFAULT_STATUS_MAX_CONNECTIONS
    this.idleTimeoutMs = limits.idleTimeoutMs ?? DEFAULT_STATUS_IDLE_TIMEOUT_MS
    const dashboard = this.dashboard = { auth: new DashboardAuth(), streams: components.events === undefined ? undefined : new EventStreams(components.events, limits.events) }
    const challenges = new ChallengeIssuer(components.token)
    this.server = createServer({ connectionsCheckingInterval: 1_000 }, (req, res) => handle(components, dashboard, challenges, this.allowed, this.downloads, req, res))
    this.server.keepAliveTimeout = Math.min(5_000, this.idleTimeoutMs)
    this.server.headersTimeout = Math.min(5_000, this.idleTimeoutMs)
    this.server.requestTimeout = 10_000
    // A socket with no traffic for this long is destroyed (no 'timeout' listener on the server).
    this.server.timeout = this.idleTimeoutMs
    this.server.on('connection', socket => { this.admit(socket) })
    this.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const state = this.sockets.get(req.socket)
      if (state === undefined) return
      state.busy++
      // A POST /snapshot may take minutes: no idle timeout while it runs; keep-alive's comes after.
      req.socket.setTimeout(0)
      res.once('close', () => { state.busy-- })
    })
  }

  private admit (socket: Socket): void {
    this.sockets.set(socket, { busy: 0 })
    socket.once('close', () => this.sockets.delete(socket))
    if (this.sockets.size <= this.maxConnections) return
    for (const [open, state] of this.sockets) {
      if (open === socket || state.busy > 0) continue
      this.sockets.delete(open)
      open.destroy()
      return
    }
    this.sockets.delete(socket)
    socket.destroy()
  }

  /** The event streams open now, and the consumers dropped for not reading. */
  get eventStreams (): { open: number, dropped: number, peakBufferedBytes: number } {
    const streams = this.dashboard.streams
    return { open: streams?.streams ?? 0, dropped: streams?.dropped ?? 0, peakBufferedBytes: streams?.peakWaiting ?? 0 }
  }

  /** Where it listens, the real port included (after listening on port 0). */
  get address (): ListenAddress | undefined {
    return this.bound
  }

  async listen (address: ListenAddress): Promise<ListenAddress> {
    if (address.kind === 'unix') {
      makeDirsSync(dirname(address.path), 0o700)
      await clearStaleSocket(address.path)
    }
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        reject(new ListenError(`the status endpoint cannot listen on ${formatListenAddress(address)}: ${err.code ?? err.message}` +
          (err.code === 'EADDRINUSE' ? ': another program uses it; set [status] listen to another port' : ''), { cause: err }))
      }
      this.server.once('error', onError)
      const ready = (): void => { this.server.off('error', onError); resolve() }
      if (address.kind === 'unix') this.server.listen(address.path, ready)
      else this.server.listen(address.port, address.host, ready)
    })
    if (address.kind === 'unix') {
      chmodSync(address.path, 0o600)
      this.bound = address
    } else {
      const info = this.server.address() as AddressInfo
      this.bound = { kind: 'tcp', host: address.host, port: info.port }
    }
    this.allowed = allowedHosts(this.bound)
    return this.bound
  }

  async close (): Promise<void> {
    if (!this.server.listening) return
    const closed = new Promise<void>(resolve => this.server.close(() => resolve()))
    this.dashboard.streams?.closeAll()
    this.server.closeAllConnections()
    await closed
    await this.downloads.settle()
    // Ours to remove only while it is still a socket.
    if (this.bound?.kind === 'unix' && lstatSync(this.bound.path, { throwIfNoEntry: false })?.isSocket() === true) rmSync(this.bound.path, { force: true })
  }
}
