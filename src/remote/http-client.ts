import type { Dispatcher, Pool } from 'undici'
import { undiciPool } from '../util/undici.js'
import type { z } from 'zod'
import { AbortedError, CidsyncError, RemoteBadRequestError, RemoteNetworkError, RemoteNotFoundError, RemoteStatusError, RemoteUnauthorizedError, type RemoteContext } from '../errors.js'
import { cidsyncVersion } from '../version.js'
import { backoffDelay, DEFAULT_RETRY_POLICY, isRetryableNetworkError, isRetryableStatus, parseRetryAfter, sleep, type RetryPolicy } from './retry.js'
import { ANSWER_LIMITS, describeErrorBody, parseBody, readBounded, readPrefix } from './body.js'
import { DEFAULT_RATE_BOUND, RateGuard, type RateBound } from './rate-guard.js'

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
export const DEFAULT_HEADERS_TIMEOUT_MS = 30_000
export const DEFAULT_BODY_TIMEOUT_MS = 60_000
/** The whole of one attempt, from connecting to the body's last byte: a body that trickles ends here. */
export const DEFAULT_DEADLINE_MS = 120_000
/** One attempt at a small answer the client reads itself (a pointer, a name, an error): it has no reason to take longer. */
export const SMALL_ANSWER_DEADLINE_MS = 30_000

export interface HttpClientInit {
  /** Names the service in errors: "deal service", "main API"... */
  readonly service: string
  readonly baseUrl: string
  /** The bearer credential, read at each request so a renewed one is used at once. */
  readonly credential?: () => string | undefined
  /** What to do when the credential is refused (401, 403). */
  readonly unauthorizedHint?: string
  /** What to do when a 401 or 403 answers a request sent with no credential (none is set): not "refused". */
  readonly missingHint?: string
  readonly connectTimeoutMs?: number
  readonly headersTimeoutMs?: number
  /** Longest wait between two pieces of a body. */
  readonly bodyTimeoutMs?: number
  /** The total time one attempt may take, body included (default {@link DEFAULT_DEADLINE_MS}). */
  readonly deadlineMs?: number
  /**
   * The slowest a body may arrive once its grace is over (default {@link DEFAULT_RATE_BOUND}):
   * a trickle ends there, each attempt, instead of at the deadline.
   */
  readonly rate?: Partial<RateBound>
  readonly retry?: Partial<RetryPolicy>
  /** Sent with every request (the embedded service's access key: see connect/embedded.ts). */
  readonly headers?: Readonly<Record<string, string>>
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
  /** This request's total deadline per attempt, instead of the client's. */
  readonly deadlineMs?: number
  /** The most {@link HttpClient.json} and {@link HttpClient.text} read of the answer (default {@link ANSWER_LIMITS}.small). */
  readonly maxBytes?: number
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
  /** Made at the first request: a command whose service runs in process may never send one, and undici takes a while to load. */
  private pooled: Pool | undefined
  /** The pool's close, once asked for. */
  private closing: Promise<void> | undefined
  private readonly base: URL
  private readonly policy: RetryPolicy
  /** The slowest a body may arrive: a gateway fetch holds to it as well. */
  readonly rate: RateBound

  constructor (private readonly init: HttpClientInit) {
    this.base = new URL(init.baseUrl)
    this.policy = { ...DEFAULT_RETRY_POLICY, ...init.retry }
    this.rate = { ...DEFAULT_RATE_BOUND, ...init.rate }
  }

  /** The URL a request goes to, as errors and logs show it. */
  url (request: Pick<HttpRequest, 'path' | 'query'>): URL {
    const url = new URL(this.base.pathname.replace(/\/$/, '') + request.path, this.base.origin)
    for (const [key, value] of Object.entries(request.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value))
    return url
  }

  /**
   * Sends a request until it succeeds or may not be retried. Answers a 2xx; the body is the
   * caller's to read, and the attempt's deadline still runs while it does: a stalled body fails
   * with a {@link RemoteNetworkError} that names the deadline.
   */
  async send (request: HttpRequest): Promise<HttpResponse> {
    return await this.exchange(request, async response => response, false)
  }

  /** Sends a request and reads its answer as text, at most `request.maxBytes`, retrying a body cut short. */
  async text (request: HttpRequest): Promise<string> {
    return await this.exchange(request, async (response, context) =>
      (await readBounded(response.body, response.headers, context, request.maxBytes ?? ANSWER_LIMITS.small)).toString('utf8'), true)
  }

  /** Sends a request and parses its JSON answer, bare or wrapped in `{data}`, with `schema`. */
  async json<S extends z.ZodType> (request: HttpRequest, schema: S): Promise<z.output<S>> {
    const text = await this.text(request)
    return parseBody(this.context(request), text, schema)
  }

  /** Names a request in errors and logs, never with a credential. */
  context (request: Pick<HttpRequest, 'method' | 'path' | 'query'>): RemoteContext {
    return { service: this.init.service, method: request.method, url: this.url(request).toString() }
  }

  /**
   * The retry loop. Each attempt has a total deadline (connect, headers and body); `read` runs
   * inside the attempt, so a body that stalls or is cut is retried like a lost answer when
   * `readInside` says the read is the client's own (not the caller's, who gets the stream).
   */
  private async exchange<T> (request: HttpRequest, read: (response: HttpResponse, context: RemoteContext) => Promise<T>, readInside: boolean): Promise<T> {
    const url = this.url(request)
    const context = this.context(request)
    const small = readInside && (request.maxBytes ?? ANSWER_LIMITS.small) <= ANSWER_LIMITS.small
    const deadlineMs = request.deadlineMs ?? this.init.deadlineMs ?? (small ? SMALL_ANSWER_DEADLINE_MS : DEFAULT_DEADLINE_MS)
    // Attempts that time out are tried again only while the request as a whole is young: five
    // trickled answers in a row would otherwise hold the caller five deadlines long.
    const started = Date.now()
    for (let attempt = 1; ; attempt++) {
      const last = request.retry === false || attempt >= this.policy.attempts
      // Outside the try: a credential that cannot be read (a file readable by others) is that
      // error, with its fix, not "no answer" from the network.
      const headers = this.headers(request)
      const deadline = new AbortController()
      const timer = setTimeout(() => {
        deadline.abort(new RemoteNetworkError(context, `the answer did not end within ${deadlineMs} ms (deadline exceeded): the service is stalled or too slow; try again later`))
      }, deadlineMs)
      timer.unref()
      const signal = request.signal === undefined ? deadline.signal : AbortSignal.any([request.signal, deadline.signal])
      let guard: RateGuard | undefined
      const settle = (): void => { clearTimeout(timer); guard?.stop() }
      let failure: unknown
      try {
        const response = await this.pool.request({
          method: request.method,
          path: url.pathname + url.search,
          headers,
          body: request.json !== undefined ? JSON.stringify(request.json) : request.body?.(),
          signal
        })
        if (response.statusCode >= 200 && response.statusCode < 300) {
          const answer = { status: response.statusCode, headers: response.headers, body: response.body }
          guard = watchRate(response.body, this.rate, message => { deadline.abort(new RemoteNetworkError(context, message)) })
          if (!readInside) {
            // The caller reads the body: the deadline and the rate bound end with it.
            response.body.once('close', settle)
            return await read(answer, context)
          }
          try {
            return await read(answer, context)
          } finally {
            settle()
          }
        }
        const excerpt = describeErrorBody(await readPrefix(response.body, ANSWER_LIMITS.small).catch(() => ''))
        settle()
        if (!last && isRetryableStatus(response.statusCode)) {
          const retryAfter = parseRetryAfter(response.headers['retry-after'])
          if (retryAfter === undefined || retryAfter <= this.policy.maxRetryAfterMs) {
            await this.wait(context, attempt, retryAfter ?? backoffDelay(this.policy, attempt), `status ${response.statusCode}`, request.signal)
            continue
          }
        }
        throw this.statusError(context, response.statusCode, excerpt, headers.authorization !== undefined)
      } catch (err) {
        settle()
        failure = err
      }
      if (request.signal?.aborted === true) throw new AbortedError(`${context.method} ${context.url} was aborted`)
      const timedOut = deadline.signal.aborted && failure === deadline.signal.reason
      // Our own errors (a status refused, an answer too large) are final; only a lost answer is retried.
      if (!timedOut && failure instanceof CidsyncError) throw failure
      const code = timedOut ? 'deadline exceeded' : (failure as { code?: string }).code ?? (failure as Error).message
      const aged = timedOut && Date.now() - started >= 2 * deadlineMs
      if (last || aged || !(timedOut || isRetryableNetworkError(failure))) {
        throw timedOut ? deadline.signal.reason as RemoteNetworkError : new RemoteNetworkError(context, `no answer (${code})`, { cause: failure })
      }
      await this.wait(context, attempt, backoffDelay(this.policy, attempt), code, request.signal)
    }
  }

  /** Ends the pool: requests in flight fail, and later ones too. A second call answers with the first. */
  async close (): Promise<void> {
    this.closing ??= this.pooled?.close() ?? Promise.resolve()
    await this.closing
  }

  private get pool (): Pool {
    if (this.pooled !== undefined) return this.pooled
    this.pooled = new (undiciPool())(this.base.origin, {
      connect: { timeout: this.init.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS },
      headersTimeout: this.init.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
      bodyTimeout: this.init.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
      keepAliveTimeout: 10_000
    })
    // A request after close() fails as one on a closed pool does.
    if (this.closing !== undefined) this.pooled.close().catch(() => {})
    return this.pooled
  }

  private headers (request: HttpRequest): Record<string, string> {
    const headers: Record<string, string> = { 'user-agent': `cidsync/${cidsyncVersion()}`, accept: 'application/json', ...this.init.headers, ...request.headers }
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

  private statusError (context: RemoteContext, status: number, excerpt: string, sentCredential: boolean): RemoteStatusError {
    if (status === 401 || status === 403) {
      const hint = !sentCredential && this.init.missingHint !== undefined ? this.init.missingHint : this.init.unauthorizedHint
      return new RemoteUnauthorizedError(context, status, excerpt, hint ?? 'the credential was refused')
    }
    if (status === 404) return new RemoteNotFoundError(context, status, excerpt, '')
    if (status === 400 || status === 422) return new RemoteBadRequestError(context, status, excerpt, '')
    if (status === 429) return new RemoteStatusError(context, status, excerpt, 'the service is limiting requests: try again later')
    if (status >= 500) return new RemoteStatusError(context, status, excerpt, 'the service failed: try again later')
    return new RemoteStatusError(context, status, excerpt, '')
  }
}


/**
 * Counts a body's bytes as the socket delivers them, before anyone reads them, so the rate bound
 * holds whoever consumes the stream (the client or a caller piping it to disk).
 */
function watchRate (body: HttpResponse['body'], bound: RateBound, onSlow: (message: string) => void): RateGuard {
  const guard = new RateGuard(bound, onSlow)
  const push = body.push.bind(body)
  body.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
    if (chunk !== null && chunk !== undefined) guard.add((chunk as { length: number }).length)
    return push(chunk, encoding)
  }
  body.once('close', () => { guard.stop() })
  return guard
}
