import type { IncomingMessage } from 'node:http'
import { isLoopbackHost } from '../config/index.js'
import { HttpFailure } from './http.js'

/**
 * Which callers the whole service answers, beyond what its credentials check: the guard every
 * route (the admin routes have a stricter one of their own) is put behind.
 *
 * - Bound to loopback, a request must name a loopback address in `Host` (127.x.x.x, [::1] or
 *   localhost, any port: an SSH tunnel's local port too), or one of `extraHosts` (what a reverse
 *   proxy in front of it sends). A web page aimed at the port by DNS rebinding (evil.example
 *   resolving to 127.0.0.1) names its own host, and could otherwise make an account and fill the
 *   disk: a 421 (Misdirected Request). Bound beyond loopback the names are not known here:
 *   sign-up is closed there by default instead.
 * - A request from a web page (one with `Origin`) must come from the host it asks: another site's
 *   page is refused, whatever it sends; so is one a browser marks `Sec-Fetch-Site: cross-site`
 *   (an `<img>` sends no `Origin`). The gateway's reads (`GET`/`HEAD` under `/ipfs/` and
 *   `/ipns/`) and delegated routing's (under `/routing/v1/`) are left to any page: they are
 *   public, verifiable, and change nothing.
 */
export class HostGuard {
  private readonly hosts: ReadonlySet<string> | undefined

  constructor (boundHost: string, private readonly port: number, extraHosts: readonly string[]) {
    this.hosts = isLoopbackHost(boundHost) ? new Set(extraHosts.map(host => host.toLowerCase())) : undefined
  }

  /** Throws the 421 (a Host not its own) or the 403 (another site's page) that says why. */
  check (req: IncomingMessage, pathname: string): void {
    const host = req.headers.host?.toLowerCase()
    if (this.hosts !== undefined && (host === undefined || !(LOOPBACK_HOST.test(host) || this.hosts.has(host)))) {
      // 421 Misdirected Request: not this service's name. Not a 403, which a client reads as its credential refused.
      throw new HttpFailure(421, `this service answers requests that name it (Host 127.0.0.1:${this.port}), not ${printable(host)}: a web page aimed at it, or a proxy in front of it (add the name the proxy sends to [local_service] hosts)`)
    }
    if (isGatewayRead(req, pathname)) return
    // A page's <img> or <script> sends no Origin, but a browser says the request is another
    // site's: 10,000 such GETs of get_auth_message filled the sign-in table (429 for everyone).
    if (req.headers['sec-fetch-site'] === 'cross-site') throw new HttpFailure(403, 'a web page of another site may not use this service')
    const origin = req.headers.origin
    if (origin === undefined) return
    const match = /^https?:\/\/([^/]+)$/.exec(origin.toLowerCase())
    if (match === null || match[1] !== host) throw new HttpFailure(403, `a web page from ${printable(origin)} may not use this service`)
  }
}

/** A loopback address or name, with any port: what a caller on this machine (or through a tunnel to it) sends. */
const LOOPBACK_HOST = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\]|localhost)(:\d{1,5})?$/

function isGatewayRead (req: IncomingMessage, pathname: string): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && (pathname.startsWith('/ipfs/') || pathname.startsWith('/ipns/') || pathname.startsWith('/routing/v1/'))
}

/** A header echoed in an answer: printable ASCII only, and short. */
function printable (value: string | undefined): string {
  if (value === undefined) return 'no Host'
  return JSON.stringify(value.replace(/[^\x20-\x7e]/g, '?').slice(0, 100))
}
