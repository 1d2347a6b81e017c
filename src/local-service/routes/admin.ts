import { createHash, randomUUID } from 'node:crypto'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { z } from 'zod'
import { HttpFailure, readJsonBody, sendJson, type Route } from '../http.js'
import { ServiceReclaimBusyError } from '../../errors.js'
import type { ReclaimResult } from '../reclaim.js'
import { faultSchema, type Faults } from '../faults.js'
import type { ServiceParts } from '../parts.js'
import { DEFAULT_SESSION_TOKEN_TTL_SECONDS } from '../tokens.js'

export interface RequestRecord { readonly at: number, readonly method: string, readonly path: string, readonly route: string, readonly status: number }

const seedRequest = z.object({ address: z.string().min(1), count: z.int().min(1).max(1_000_000) })

const tokenRequest = z.object({ user: z.string().min(1), ttlSeconds: z.int().min(1).max(366 * 86_400).default(DEFAULT_SESSION_TOKEN_TTL_SECONDS) })

/**
 * Admin routes for operators and tests: session tokens, faults, the request log. They are not part
 * of the production service, exist only when the service is started with `admin`, and need the
 * admin token from a loopback client that is not a web page.
 */
export function adminRoutes (parts: ServiceParts, faults: Faults, requests: () => readonly RequestRecord[], reclaim: () => Promise<ReclaimResult>): Route[] {
  return [{
    name: 'local_token',
    methods: ['POST'],
    path: '/local/token',
    auth: 'admin',
    handle: async ({ req, res }) => {
      const parsed = tokenRequest.safeParse(await readJsonBody(req))
      if (!parsed.success) throw new HttpFailure(400, 'expected {"user": "...", "ttlSeconds": N}')
      sendJson(res, 200, { token: parts.tokens.issue(parsed.data.user, parsed.data.ttlSeconds) })
    }
  }, {
    name: 'local_faults',
    methods: ['PUT', 'DELETE'],
    path: '/local/faults',
    auth: 'admin',
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
    // Tests: an account with many uploads, without uploading them one by one.
    name: 'local_seed_files',
    methods: ['POST'],
    path: '/local/seed-files',
    auth: 'admin',
    handle: async ({ req, res }) => {
      const parsed = seedRequest.safeParse(await readJsonBody(req))
      if (!parsed.success) throw new HttpFailure(400, 'expected {"address": "0x...", "count": N}')
      const insert = parts.db.prepare('INSERT INTO files (id, address, cid, file_name, mime_type, size, created_at, last_update) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      const now = Date.now()
      parts.db.transaction(() => {
        for (let i = 0; i < parsed.data.count; i++) insert.run(randomUUID(), parsed.data.address.toLowerCase(), seedCid(`${now}-${i}`), `seed-${i}.bin`, 'application/octet-stream', 100 + i, now + i, now + i)
      }).immediate()
      sendJson(res, 200, { ok: true })
    }
  }, {
    // Tests: an upload removed on the account's side.
    name: 'local_delete_file',
    methods: ['DELETE'],
    path: '/local/files',
    auth: 'admin',
    handle: ({ url, res }) => {
      const cid = url.searchParams.get('cid') ?? ''
      const removed = parts.db.prepare('DELETE FROM files WHERE cid = ?').run(cid).changes
      if (removed > 0) parts.deleted()
      sendJson(res, 200, { removed })
    }
  }, {
    // Gives back the space of blocks nothing holds now (reclaim.ts), and answers what it freed.
    name: 'local_reclaim',
    methods: ['POST'],
    path: '/local/reclaim',
    auth: 'admin',
    handle: async ({ res }) => {
      let result: ReclaimResult
      try {
        result = await reclaim()
      } catch (err) {
        if (err instanceof ServiceReclaimBusyError) throw new HttpFailure(409, err.message)
        // An operator's route: what failed is said, with its code, not production's bare 500.
        throw new HttpFailure(500, `the reclaim failed (${(err as { code?: string }).code ?? 'error'}): ${(err as Error).message}`)
      }
      sendJson(res, 200, result)
    }
  }, {
    name: 'local_requests',
    methods: ['GET'],
    path: '/local/requests',
    auth: 'admin',
    handle: ({ res }) => sendJson(res, 200, requests())
  }]
}

/** A real CID (raw, sha2-256) for seeded records: cidsync skips listing records that are not CIDs. */
function seedCid (text: string): string {
  return CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(text).digest())).toString()
}
