import type { IncomingMessage, ServerResponse } from 'node:http'
import { z } from 'zod'
import { CID } from 'multiformats/cid'
import { splitPath, type FindService } from '../find/index.js'
import type { DashboardRoutes } from './dashboard-routes.js'
import { hasStatusToken } from './status-token.js'
import { NotReadyError } from '../errors.js'

/** The paths this file answers. */
export const FIND_PATHS = new Set(['/search', '/where', '/log', '/browse'])

const flag = z.enum(['0', '1', 'true', 'false']).optional().transform(v => v === '1' || v === 'true')
const deviceId = z.string().min(1).max(128).optional()
const SCHEMAS = {
  '/search': z.object({ q: z.string().min(1).max(1000), device: deviceId, deleted: flag, literal: flag, limit: z.coerce.number().int().min(1).max(500).default(50) }),
  '/where': z.object({ cid: z.string().min(1).max(256), limit: z.coerce.number().int().min(1).max(10_000).default(1_000) }),
  '/log': z.object({ path: z.string().min(3).max(8192) }),
  '/browse': z.object({ device: deviceId, prefix: z.string().max(8192).default(''), at: z.string().max(64).refine(t => Number.isFinite(Date.parse(t)), 'not a time (RFC 3339)').optional() })
}

function send (res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' })
  res.end(JSON.stringify(body) + '\n')
}

/**
 * Answers 401/403 (and true) unless the request holds the status token, or a signed-in dashboard
 * session from its own page with its CSRF header: file names and contents are private.
 */
export function refuseUnsigned (dashboard: DashboardRoutes, token: string, req: IncomingMessage, res: ServerResponse, path: string): boolean {
  if (hasStatusToken(req.headers.authorization, token)) return false
  const why = req.headers.cookie === undefined ? 'not signed in' : dashboard.auth.refusal(req)
  if (why === undefined) return false
  send(res, req.headers.cookie === undefined ? 401 : 403, { error: `${path} needs Authorization: Bearer <the token in the state dir's status.token>, or the dashboard signed in (${why})` })
  return true
}

/**
 * `GET /search?q=`, `/where?cid=&limit=`, `/log?path=folder/path`, `/browse?device=&prefix=&at=`: the find
 * room's answers for tooling and the dashboard. File names are private: these need the state
 * dir's token (`Authorization: Bearer`) or a dashboard session from its own page with its CSRF
 * header, as POSTs do. The Host and Origin guards ran before. Answers whether it handled the request.
 */
export function handleFindGet (find: FindService | undefined, dashboard: DashboardRoutes, token: string, req: IncomingMessage, res: ServerResponse, url: URL): boolean {
  const path = url.pathname
  if (!FIND_PATHS.has(path)) return false
  if (req.method !== 'GET') {
    res.writeHead(405, { allow: 'GET', 'content-type': 'text/plain; charset=utf-8' })
    res.end(`method not allowed: ${req.method ?? ''} ${path}\n`)
    return true
  }
  if (refuseUnsigned(dashboard, token, req, res, path)) return true
  if (find === undefined) {
    send(res, 503, { error: 'search is not available in this daemon yet' })
    return true
  }
  const parsed = SCHEMAS[path as keyof typeof SCHEMAS].safeParse(Object.fromEntries(url.searchParams))
  if (!parsed.success) {
    send(res, 400, { error: `bad query for ${path}: ${parsed.error.issues.map(i => `${i.path.join('.')}: ${i.message}`).join('; ')}` })
    return true
  }
  try {
    const q = parsed.data as Record<string, unknown>
    if (path === '/search') {
      send(res, 200, find.search({ pattern: q.q as string, deviceId: q.device as string | undefined, includeDeleted: q.deleted as boolean, literal: q.literal as boolean, limit: q.limit as number }))
    } else if (path === '/where') {
      let cid: string
      try {
        cid = CID.parse(q.cid as string).toString()
      } catch {
        send(res, 400, { error: 'cid: not a CID' })
        return true
      }
      send(res, 200, find.where(cid, q.limit as number))
    } else if (path === '/log') {
      const split = splitPath(q.path as string)
      if (split === undefined) send(res, 400, { error: 'path: expected folder/path' })
      else send(res, 200, find.log(split.folder, split.path))
    } else if (q.at !== undefined) {
      // Fetching a past publish's segments takes a while: answered when built, its failure said.
      find.browseAt(q.device as string | undefined, q.prefix as string, new Date(q.at as string)).then(
        (listing) => { send(res, 200, listing) },
        (err: unknown) => { send(res, err instanceof NotReadyError ? 503 : (err as { exitCode?: number }).exitCode === 3 ? 404 : 502, { error: (err as Error).message }) })
    } else {
      send(res, 200, find.browse(q.device as string | undefined, q.prefix as string))
    }
  } catch (err) {
    send(res, 500, { error: (err as Error).message })
  }
  return true
}
