import { Pool, type Dispatcher } from 'undici'
import type { z } from 'zod'
import { AbortedError, RemoteBadRequestError, RemoteNetworkError, RemoteNotFoundError, RemoteStatusError, RemoteUnauthorizedError, type RemoteContext } from '../errors.js'
import { VERSION } from '../version.js'
import { backoffDelay, DEFAULT_RETRY_POLICY, isRetryableNetworkError, isRetryableStatus, parseRetryAfter, sleep, type RetryPolicy } from './retry.js'
import { describeErrorBody, parseBody } from './body.js'

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
export const DEFAULT_HEADERS_TIMEOUT_MS = 30_000
export const DEFAULT_BODY_TIMEOUT_MS = 60_000

export interface HttpClientInit {
  /** Names the service in errors: "deal service", "main API"... */
  readonly service: string
  readonly baseUrl: string
  /** The bearer credential, read at each request so a renewed one is used at once. */
  readonly credential?: () => string | undefined
  /** What to do when the credential is refused (401, 403). */
  readonly unauthorizedHint?: string
  readonly connectTimeoutMs?: number
  readonly headersTimeoutMs?: number
  readonly bodyTimeoutMs?: number
  readonly retry?: Partial<RetryPolicy>
  /** Told of each retry, for logs and metrics. */
  readonly onRetry?: (info: { attempt: number, delayMs: number, reason: string, context: RemoteContext }) => void
}

export interface HttpRequest {
  readonly method: 'GET' | 'PUT' | 'POST' | 'DELETE'
  /** Appended to the base URL's path. */
  readonly path: string
  readonly query?: Readonly<Record<string, string | number | undefined>>
  /** A JSON body. */
  readonly json?: unknown
  /** Any other body; a function so that each attempt gets a fresh stream. */
  readonly body?: () => NonNullable<Dispatcher.RequestOptions['body']>
  readonly headers?: Readonly<Record<string, string>>
  readonly signal?: AbortSignal
  /** Send the credential (default true). */
  readonly auth?: boolean
  /** Retry what may succeed later (default true); off for bodies that cannot be replayed. */
  readonly retry?: boolean
}

export interface HttpResponse {
  readonly status: number
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: Dispatcher.ResponseData['body']
}

/**
 * One service's HTTP: a pooled keep-alive dispatcher, timeouts on connect, headers and body,
 * retries of 408, 429, 5xx and network failures with backoff, jitter and `Retry-After`, and typed
 * errors that name the method and URL (never a credential) and say what to do.
 */
export class HttpClient {
  private readonly pool: Pool
  private readonly base: URL
  private readonly policy: RetryPolicy

  constructor (private readonly init: HttpClientInit) {
    this.base = new URL(init.baseUrl)
    this.pool = new Pool(this.base.origin, {
      connect: { timeout: init.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS },
      headersTimeout: init.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
      bodyTimeout: init.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
      keepAliveTimeout: 10_000
    })
    this.policy = { ...DEFAULT_RETRY_POLICY, ...init.retry }
  }

  /** The URL a request goes to, as errors and logs show it. */
  url (request: Pick<HttpRequest, 'path' | 'query'>): URL {
    const url = new URL(this.base.pathname.replace(/\/$/, '') + request.path, this.base.origin)
    for (const [key, value] of Object.entries(request.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value))
    return url
  }

  /** Sends a request until it succeeds or may not be retried. Answers a 2xx; the body is the caller's to read. */
  async send (request: HttpRequest): Promise<HttpResponse> {
    const url = this.url(request)
    const context: RemoteContext = { service: this.init.service, method: request.method, url: url.toString() }
    for (let attempt = 1; ; attempt++) {
      const last = request.retry === false || attempt >= this.policy.attempts
      // Outside the try: a credential that cannot be read (a file readable by others) is that
      // error, with its fix, not "no answer" from the network.
      const headers = this.headers(request)
      let response: Dispatcher.ResponseData
      try {
        response = await this.pool.request({
          method: request.method,
          path: url.pathname + url.search,
          headers,
          body: request.json !== undefined ? JSON.stringify(request.json) : request.body?.(),
          signal: request.signal
        })
      } catch (err) {
        if (request.signal?.aborted === true) throw new AbortedError(`${context.method} ${context.url} was aborted`)
        if (last || !isRetryableNetworkError(err)) throw new RemoteNetworkError(context, `no answer (${(err as { code?: string }).code ?? (err as Error).message})`, { cause: err })
        await this.wait(context, attempt, backoffDelay(this.policy, attempt), (err as { code?: string }).code ?? 'network error', request.signal)
        continue
      }
      if (response.statusCode >= 200 && response.statusCode < 300) {
        return { status: response.statusCode, headers: response.headers, body: response.body }
      }
      const excerpt = describeErrorBody(await response.body.text().catch(() => ''))
      if (!last && isRetryableStatus(response.statusCode)) {
        const retryAfter = parseRetryAfter(response.headers['retry-after'])
        if (retryAfter === undefined || retryAfter <= this.policy.maxRetryAfterMs) {
          await this.wait(context, attempt, retryAfter ?? backoffDelay(this.policy, attempt), `status ${response.statusCode}`, request.signal)
          continue
        }
      }
      throw this.statusError(context, response.statusCode, excerpt)
    }
  }

  /** Sends a request and parses its JSON answer, bare or wrapped in `{data}`, with `schema`. */
  async json<S extends z.ZodType> (request: HttpRequest, schema: S): Promise<z.output<S>> {
    const response = await this.send(request)
    const context = { service: this.init.service, method: request.method, url: this.url(request).toString() }
    const text = await response.body.text()
    return parseBody(context, text, schema)
  }

  async close (): Promise<void> {
    await this.pool.close()
  }

  private headers (request: HttpRequest): Record<string, string> {
    const headers: Record<string, string> = { 'user-agent': `cidsync/${VERSION}`, accept: 'application/json', ...request.headers }
    if (request.json !== undefined) headers['content-type'] = 'application/json'
    const credential = request.auth === false ? undefined : this.init.credential?.()
    if (credential !== undefined && credential !== '') headers.authorization = `Bearer ${credential}`
    return headers
  }

  private async wait (context: RemoteContext, attempt: number, delayMs: number, reason: string, signal?: AbortSignal): Promise<void> {
    this.init.onRetry?.({ attempt, delayMs, reason, context })
    try {
      await sleep(delayMs, signal)
    } catch {
      throw new AbortedError(`${context.method} ${context.url} was aborted`)
    }
  }

  private statusError (context: RemoteContext, status: number, excerpt: string): RemoteStatusError {
    if (status === 401 || status === 403) {
      return new RemoteUnauthorizedError(context, status, excerpt, this.init.unauthorizedHint ?? 'the credential was refused')
    }
    if (status === 404) return new RemoteNotFoundError(context, status, excerpt, '')
    if (status === 400 || status === 422) return new RemoteBadRequestError(context, status, excerpt, '')
    if (status === 429) return new RemoteStatusError(context, status, excerpt, 'the service is limiting requests: try again later')
    if (status >= 500) return new RemoteStatusError(context, status, excerpt, 'the service failed: try again later')
    return new RemoteStatusError(context, status, excerpt, '')
  }
}

