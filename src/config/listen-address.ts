import { isAbsolute } from 'node:path'

/** Where the status endpoint listens: loopback TCP, or a unix socket. */
export type ListenAddress =
  | { readonly kind: 'tcp', readonly host: string, readonly port: number }
  | { readonly kind: 'unix', readonly path: string }

const LOOPBACK_HOSTS = new Set(['localhost', '::1', '[::1]'])

export function isLoopbackHost (host: string): boolean {
  return LOOPBACK_HOSTS.has(host.toLowerCase()) || /^127(\.\d{1,3}){3}$/.test(host)
}

/**
 * Parses `host:port`, `[::1]:port` or `unix:/path`. Answers an error text, not a throw, so the
 * config loader can name the key and its source.
 */
export function parseListenAddress (value: string): ListenAddress | { error: string } {
  if (value.startsWith('unix:')) {
    const path = value.slice('unix:'.length)
    return isAbsolute(path) ? { kind: 'unix', path } : { error: 'expected an absolute socket path after "unix:"' }
  }
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value)
  if (match === null) return { error: 'expected "127.0.0.1:PORT", "[::1]:PORT", "localhost:PORT" or "unix:/path/to.sock"' }
  const host = (match[1] as string).replace(/^\[(.*)\]$/, '$1')
  const port = Number(match[2])
  if (port > 65535) return { error: 'expected a port from 0 to 65535' }
  if (!isLoopbackHost(host)) return { error: 'expected a loopback address (127.0.0.1, ::1 or localhost): the status endpoint is never exposed to the network' }
  return { kind: 'tcp', host: host === 'localhost' ? '127.0.0.1' : host, port }
}

export function formatListenAddress (address: ListenAddress): string {
  return address.kind === 'unix' ? `unix:${address.path}` : `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`
}
