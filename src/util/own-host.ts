/**
 * The guard both local HTTP servers (the daemon's status endpoint, the local service's admin
 * routes) put before routing: a request must name our own loopback address and port in `Host`,
 * and a web page (a request with `Origin`) may ask only from that same origin. Anything else is a
 * browser aimed at us by DNS rebinding (a page on evil.example resolving to 127.0.0.1), another
 * site's page, or a guess. No CORS header is ever sent.
 */

/** The exact `Host` values a server bound to `host:port` answers to: the loopback names with its port. */
export function ownHosts (host: string, port: number): Set<string> {
  const bound = host.includes(':') ? `[${host}]` : host
  const names = new Set(['127.0.0.1', 'localhost', '[::1]', bound.toLowerCase()])
  const hosts = new Set([...names].map(name => `${name}:${port}`))
  if (port === 80) for (const name of names) hosts.add(name)
  return hosts
}

/** Whether a `Host` header names one of ours. */
export function isOwnHost (header: string | undefined, own: ReadonlySet<string>): boolean {
  return header !== undefined && own.has(header.toLowerCase())
}

/** Whether a request's `Origin` (if any: a web page's) is our own; a cross-origin or `null` one is not. */
export function isOwnOrigin (origin: string | undefined, own: ReadonlySet<string>): boolean {
  if (origin === undefined) return true
  const match = /^http:\/\/(.+)$/.exec(origin.toLowerCase())
  return match !== null && own.has(match[1] as string)
}
