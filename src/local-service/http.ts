import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Fault } from './faults.js'

/** Who a request is from, once its credential has been checked. */
export interface Caller { readonly address: string }

export interface RouteContext {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly url: URL
  readonly params: readonly string[]
  /** Set for routes that need an API key or a session token; `''` for one sent no key. */
  readonly caller: Caller
  /** The fault injected into this request, for routes that corrupt bodies. */
  readonly fault: Fault | undefined
}

/**
 * `admin`: the `/local/...` routes, behind the admin token (see admin-guard.ts). `api-key-optional`:
 * open to anyone, as production's route is; a key sent must be known, and names the caller.
 */
export type Auth = 'none' | 'api-key' | 'api-key-optional' | 'session' | 'admin'

export interface Route {
  /** Names the route in faults and the request log: `add_cid`, `files_uploaded`... */
  readonly name: string
  readonly methods: readonly string[]
  /** A literal path, or a pattern whose groups become `params`. */
  readonly path: string | RegExp
  readonly auth: Auth
  readonly handle: (context: RouteContext) => Promise<void> | void
}

/** A failure the route wants answered as `{"error": message}` with `status`. */
export class HttpFailure extends Error {
  /** `headers`: sent with the answer (a 429's `Retry-After`). */
  constructor (readonly status: number, message: string, readonly headers: Readonly<Record<string, string>> = {}) {
    super(message)
  }
}

export function sendJson (res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/** A required query parameter, or a 400 naming it. */
export function requireParam (url: URL, name: string): string {
  const value = url.searchParams.get(name)
  if (value === null || value === '') throw new HttpFailure(400, `missing query parameter ${name}`)
  return value
}

export async function readJsonBody (req: IncomingMessage, limitBytes = 1024 * 1024): Promise<unknown> {
  let size = 0
  const chunks: Buffer[] = []
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength
    if (size > limitBytes) throw new HttpFailure(413, `body larger than ${limitBytes} bytes`)
    chunks.push(chunk as Buffer)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new HttpFailure(400, 'body is not valid JSON')
  }
}
