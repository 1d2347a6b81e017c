import { z } from 'zod'
import { POINTER_NAME_MAX } from '../../config/index.js'
import type Database from 'better-sqlite3'
import { HttpFailure, readJsonBody, requireParam, sendJson, type Route } from '../http.js'
import { parseCid, type ServiceParts } from '../parts.js'
import { accountReads, pointerRecord as record, type PointerRow } from '../reads/index.js'

/**
 * Pointers one user may hold, each at most this long a name: a wallet that can get its own
 * session token (create_session_token) must not fill the database with namespaces.
 */
export const MAX_POINTERS_PER_USER = 1_000
const NAME = z.string().min(1).max(POINTER_NAME_MAX)

const pointerBody = z.object({
  snapshotCid: z.string().min(1).max(256),
  engine: z.string().max(256).default(''),
  namespace: NAME.default('default'),
  network: NAME.default('mainnet'),
  memories: z.int().min(0).optional()
})

/** The pointers as the routes read and write them; the embedded service's commands call the same in process. */
export interface PointerTable {
  /** The user's pointer for the pair, or undefined when none was put. */
  readonly current: (user: string, namespace: string, network: string) => PointerRow | undefined
  /** Overwrites the user's pointer from a request's body; the route's `HttpFailure` where it refuses it. */
  readonly put: (user: string, body: unknown) => PointerRow
}

export function pointerTable (db: Database.Database): PointerTable {
  const upsert = db.prepare(`INSERT INTO pointers (user_id, namespace, network, snapshot_cid, engine, memories, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (user_id, namespace, network) DO UPDATE SET snapshot_cid = excluded.snapshot_cid, engine = excluded.engine, memories = excluded.memories, updated_at = excluded.updated_at`)
  // The read the embedded service's commands make in process too (reads/): one answer either way.
  const current = accountReads(db).pointer
  const held = db.prepare('SELECT count(*) FROM pointers WHERE user_id = ?').pluck()
  return {
    current,
    put: (user, body) => {
      const parsed = pointerBody.safeParse(body)
      if (!parsed.success) throw new HttpFailure(400, `invalid pointer: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? ''}`.trim())
      const p = parsed.data
      parseCid(p.snapshotCid)
      if (current(user, p.namespace, p.network) === undefined && (held.get(user) as number) >= MAX_POINTERS_PER_USER) {
        throw new HttpFailure(403, `this user holds ${MAX_POINTERS_PER_USER} pointers, the most allowed: reuse a namespace`)
      }
      upsert.run(user, p.namespace, p.network, p.snapshotCid, p.engine, p.memories ?? null, new Date().toISOString())
      return current(user, p.namespace, p.network) as PointerRow
    }
  }
}

/** The pointer service: the latest snapshot CID per user, namespace and network. PUT overwrites. */
export function pointerRoutes (parts: ServiceParts, pointers: PointerTable = pointerTable(parts.db)): Route[] {
  return [{
    name: 'pointers_put',
    methods: ['PUT'],
    path: '/v1/pointers',
    auth: 'session',
    handle: async ({ req, res, caller }) => {
      sendJson(res, 200, { pointer: record(pointers.put(caller.address, await readJsonBody(req))) })
    }
  }, {
    name: 'pointers_get',
    methods: ['GET'],
    path: '/v1/pointers/current',
    auth: 'session',
    handle: ({ url, res, caller }) => {
      const namespace = url.searchParams.get('namespace') ?? 'default'
      const network = url.searchParams.get('network') ?? 'mainnet'
      if (namespace === '' || network === '') requireParam(url, namespace === '' ? 'namespace' : 'network')
      const row = pointers.current(caller.address, namespace, network)
      if (row === undefined) throw new HttpFailure(404, `no pointer for namespace ${namespace} on network ${network}`)
      sendJson(res, 200, { pointer: record(row) })
    }
  }]
}
