import type { IncomingMessage, ServerResponse } from 'node:http'
import { DASHBOARD_CSP, dashboardAsset } from '../dashboard/index.js'
import type { DashboardAuth } from './dashboard-auth.js'
import type { EventStreams } from './event-stream.js'

/** Headers every dashboard answer carries: never cached, never framed, no Referer (a login code is in a URL once). */
const PAGE_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy': DASHBOARD_CSP
}

function answer (res: ServerResponse, status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...PAGE_HEADERS, 'content-type': type, ...headers })
  res.end(body)
}

export interface DashboardRoutes {
  readonly auth: DashboardAuth
  readonly streams: EventStreams | undefined
}

/**
 * The GETs the dashboard needs: the page and its files, `/events`, `/session` (is this browser
 * signed in, and its CSRF token) and `/login?code=` (a login code traded for the session cookie,
 * then back to the page, which drops the code from the address bar). Answers whether it handled
 * the request. The Host and Origin guards ran before.
 */
export function handleDashboardGet (routes: DashboardRoutes, req: IncomingMessage, res: ServerResponse, url: URL): boolean {
  const path = url.pathname
  const asset = dashboardAsset(path)
  if (asset !== undefined) {
    answer(res, 200, asset.type, req.method === 'HEAD' ? '' : asset.body)
    return true
  }
  // A HEAD must neither open a stream nor use a login code up (link previews send them).
  if ((path === '/events' || path === '/login') && req.method !== 'GET') {
    answer(res, 405, 'text/plain; charset=utf-8', '', { allow: 'GET' })
    return true
  }
  if (path === '/events' && routes.streams !== undefined) {
    routes.streams.handle(req, res, url, { pid: process.pid })
    return true
  }
  if (path === '/session') {
    const session = routes.auth.session(req)
    // Never the CSRF token: the cookie alone (which other local ports can receive) must not get it.
    const body = session === undefined ? { signedIn: false } : { signedIn: true, expiresAt: new Date(session.expiresAt).toISOString() }
    answer(res, 200, 'application/json', JSON.stringify(body) + '\n')
    return true
  }
  if (path === '/login') {
    const signedIn = routes.auth.redeem(url.searchParams.get('code') ?? '', req.headers.host ?? '')
    if (signedIn === undefined) {
      answer(res, 403, 'text/plain; charset=utf-8', 'this login link was already used or has expired (links work once, for two minutes): run `cidsync dashboard` for a new one\n')
      return true
    }
    answer(res, 303, 'text/plain; charset=utf-8', 'signed in\n', { location: `/#csrf=${signedIn.csrf}`, 'set-cookie': signedIn.cookie })
    return true
  }
  return false
}
