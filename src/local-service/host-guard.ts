import type { IncomingMessage } from 'node:http'
import { isLoopbackHost } from '../config/index.js'
import { ownHosts } from '../util/own-host.js'
import { HttpFailure } from './http.js'

/**
 * Which callers the whole service answers, beyond what its credentials check: the guard every
 * route (the admin routes have a stricter one of their own) is put behind.
 *
 * - Bound to loopback, a request must name the service in `Host`: its loopback address and port,
 *   or one of `extraHosts` (what a reverse proxy in front of it sends). A web page aimed at the
 *   port by DNS rebinding (evil.example resolving to 127.0.0.1) names its own host, and could
 *   otherwise make an account and fill the disk. Bound beyond loopback the names are not known
 *   here: sign-up is closed there by default instead.
 * - A request from a web page (one with `Origin`) must come from the host it asks: another site's
 *   page is refused, whatever it sends. The gateway's reads (`GET`/`HEAD` under `/ipfs/`) are
 *   left to any page: they are public by CID and change nothing.
 */
export class HostGuard {
  private readonly hosts: ReadonlySet<string> | undefined

  constructor (boundHost: string, port: number, extraHosts: readonly string[]) {
    this.hosts = isLoopbackHost(boundHost)
      ? new Set([...ownHosts(boundHost, port), ...extraHosts.map(host => host.toLowerCase())])
      : undefined
  }

  /** Throws the 403 that says why, for a request this service does not answer. */
  check (req: IncomingMessage, pathname: string): void {
    const host = req.headers.host?.toLowerCase()
    if (this.hosts !== undefined && (host === undefined || !this.hosts.has(host))) {
      throw new HttpFailure(403, `this service answers requests that name it (Host ${[...this.hosts][0] ?? ''}), not ${printable(host)}: a web page aimed at it, or a proxy in front of it (add the name the proxy sends to [local_service] hosts)`)
    }
    const origin = req.headers.origin
    if (origin === undefined || isGatewayRead(req, pathname)) return
    const match = /^https?:\/\/([^/]+)$/.exec(origin.toLowerCase())
    if (match === null || match[1] !== host) throw new HttpFailure(403, `a web page from ${printable(origin)} may not use this service`)
  }
}

function isGatewayRead (req: IncomingMessage, pathname: string): boolean {
  return (req.method === 'GET' || req.method === 'HEAD') && (pathname.startsWith('/ipfs/') || pathname.startsWith('/ipns/'))
}

/** A header echoed in an answer: printable ASCII only, and short. */
function printable (value: string | undefined): string {
  if (value === undefined) return 'no Host'
  return JSON.stringify(value.replace(/[^\x20-\x7e]/g, '?').slice(0, 100))
}
