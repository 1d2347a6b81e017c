import { z } from 'zod'
import { HttpFailure, readJsonBody, sendJson, type Route } from '../http.js'
import { faultSchema, type Faults } from '../faults.js'
import type { ServiceParts } from '../parts.js'

export interface RequestRecord { readonly at: number, readonly method: string, readonly path: string, readonly route: string, readonly status: number }

const tokenRequest = z.object({ user: z.string().min(1), ttlSeconds: z.int().min(1).max(366 * 86_400).default(30 * 86_400) })

/**
 * Loopback-only routes for operators and tests: session tokens, faults, the request log. They are
 * not part of the production service.
 */
export function adminRoutes (parts: ServiceParts, faults: Faults, requests: () => readonly RequestRecord[]): Route[] {
  return [{
    name: 'local_token',
    methods: ['POST'],
    path: '/local/token',
    auth: 'loopback',
    handle: async ({ req, res }) => {
      const parsed = tokenRequest.safeParse(await readJsonBody(req))
      if (!parsed.success) throw new HttpFailure(400, 'expected {"user": "...", "ttlSeconds": N}')
      sendJson(res, 200, { token: parts.tokens.issue(parsed.data.user, parsed.data.ttlSeconds) })
    }
  }, {
    name: 'local_faults',
    methods: ['PUT', 'DELETE'],
    path: '/local/faults',
    auth: 'loopback',
    handle: async ({ req, res }) => {
      if (req.method === 'DELETE') {
        faults.clear()
      } else {
        const parsed = z.record(z.string(), faultSchema).safeParse(await readJsonBody(req))
        if (!parsed.success) throw new HttpFailure(400, `invalid faults: ${parsed.error.issues[0]?.message ?? ''}`)
        for (const [route, fault] of Object.entries(parsed.data)) faults.set(route, fault)
      }
      sendJson(res, 200, { ok: true })
    }
  }, {
    name: 'local_requests',
    methods: ['GET'],
    path: '/local/requests',
    auth: 'loopback',
    handle: ({ res }) => sendJson(res, 200, requests())
  }]
}
