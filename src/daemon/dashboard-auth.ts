import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

/** A login code lives this long and works once. */
export const LOGIN_CODE_TTL_MS = 120_000
/** A dashboard session (the cookie) lives this long; `cidsync dashboard` signs in again. */
export const SESSION_TTL_MS = 2 * 3_600_000
const MAX_CODES = 8
const MAX_SESSIONS = 16
/** The header the page's buttons send their session's CSRF token in. */
export const CSRF_HEADER = 'x-cidsync-csrf'

interface Session { readonly host: string, readonly csrf: string, readonly expiresAt: number }

function same (a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.byteLength === y.byteLength && timingSafeEqual(x, y)
}

/** Drops expired entries, then the oldest past `max` (a Map keeps insertion order). */
function prune<T extends { expiresAt: number }> (map: Map<string, T>, max: number, now: number): void {
  for (const [key, value] of map) if (value.expiresAt <= now) map.delete(key)
  for (const key of map.keys()) {
    if (map.size <= max) break
    map.delete(key)
  }
}

/**
 * Cookies are not kept apart by port: one name per port keeps two daemons on one machine (two
 * state dirs) from signing each other's browser out.
 */
export function sessionCookieName (host: string): string {
  return `cidsync_session_${/:(\d+)$/.exec(host)?.[1] ?? '80'}`
}

/** Every value of a cookie: a page on another local port can plant one of the same name (cookies ignore ports), which must not hide ours. */
function cookies (header: string | undefined, name: string): string[] {
  const values: string[] = []
  for (const part of (header ?? '').split(';').slice(0, 100)) {
    const [key, ...value] = part.trim().split('=')
    if (key === name) values.push(value.join('='))
  }
  return values
}

/**
 * Who may press the dashboard's buttons. Reading needs nothing; acting needs the state dir's
 * token, which a browser never holds: `cidsync dashboard` trades it (a Bearer POST) for a login
 * code that is random, works once and lives two minutes; the browser trades the code for a
 * session cookie (HttpOnly, SameSite=Strict) bound to the exact Host it was issued on. A POST with
 * that cookie must also come from the same origin and carry the session's CSRF token in a header.
 * The token reaches the page once, in the fragment of the login redirect (`/#csrf=`), and stays in
 * the tab's sessionStorage, which is per origin, port included: cookies are not, so a program on
 * another local port that the browser visits receives the cookie, but never the token.
 * Sessions live in memory: a restart signs everyone out.
 */
export class DashboardAuth {
  private readonly codes = new Map<string, { expiresAt: number }>()
  private readonly sessions = new Map<string, Session>()

  /** `now`: the clock, moved by tests. */
  constructor (private readonly now: () => number = Date.now) {}

  issueCode (): { code: string, expiresAt: string } {
    prune(this.codes, MAX_CODES - 1, this.now())
    const code = randomBytes(24).toString('base64url')
    const expiresAt = this.now() + LOGIN_CODE_TTL_MS
    this.codes.set(code, { expiresAt })
    return { code, expiresAt: new Date(expiresAt).toISOString() }
  }

  /** Uses the code up and answers the `Set-Cookie` value and the session's CSRF token, or undefined for a code unknown, used or expired. */
  redeem (code: string, host: string): { cookie: string, csrf: string } | undefined {
    prune(this.codes, MAX_CODES, this.now())
    const known = [...this.codes.keys()].find(candidate => same(candidate, code))
    if (known === undefined) return undefined
    this.codes.delete(known)
    prune(this.sessions, MAX_SESSIONS - 1, this.now())
    const id = randomBytes(32).toString('base64url')
    const csrf = randomBytes(24).toString('base64url')
    this.sessions.set(id, { host: host.toLowerCase(), csrf, expiresAt: this.now() + SESSION_TTL_MS })
    return { cookie: `${sessionCookieName(host)}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_TTL_MS / 1000}`, csrf }
  }

  /** The request's session: its cookie known, not expired, and issued for this very Host. */
  session (req: IncomingMessage): (Session & { id: string }) | undefined {
    const host = (req.headers.host ?? '').toLowerCase()
    for (const id of cookies(req.headers.cookie, sessionCookieName(host))) {
      const found = [...this.sessions.entries()].find(([candidate]) => same(candidate, id))
      if (found === undefined || found[1].expiresAt <= this.now() || found[1].host !== host) continue
      return { id: found[0], ...found[1] }
    }
    return undefined
  }

  end (req: IncomingMessage): string {
    const session = this.session(req)
    if (session !== undefined) this.sessions.delete(session.id)
    return `${sessionCookieName(req.headers.host ?? '')}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`
  }

  /**
   * Why a POST carrying a session cookie is refused, or undefined when it may act: a session for
   * this Host, from this origin exactly (Origin, or Sec-Fetch-Site when a client sends no
   * Origin), with the session's CSRF token.
   */
  refusal (req: IncomingMessage): string | undefined {
    const session = this.session(req)
    if (session === undefined) return 'not signed in: run `cidsync dashboard` and open the link it prints'
    const origin = req.headers.origin
    const site = req.headers['sec-fetch-site']
    if (origin !== undefined ? origin.toLowerCase() !== `http://${session.host}` : site !== undefined && site !== 'same-origin' && site !== 'none') {
      return 'the request did not come from the dashboard\'s own page'
    }
    const csrf = req.headers[CSRF_HEADER]
    if (typeof csrf !== 'string' || !same(csrf, session.csrf)) return `the request lacks the session's ${CSRF_HEADER} header: reload the page`
    return undefined
  }
}
