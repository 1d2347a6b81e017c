import type { Index } from '../index/index.js'
import type { CachedRow, SearchCache } from './search-cache.js'
import { storedState, type StoredState } from './stored-state.js'

export interface Holder {
  readonly deviceId: string
  readonly hostname: string
  readonly folder: string
  readonly path: string
  readonly size: number
  /** When the device's row took this content (its last write with it). */
  readonly since: number
  readonly deleted: boolean
}

export interface WhereResult {
  readonly cid: string
  readonly stored: StoredState
  readonly holders: Holder[]
  /** More devices and paths hold it than `limit` let through (an empty file's CID is held by thousands). */
  readonly more: boolean
}

/**
 * Every device and path that holds `cid` (parsed as a CID by the caller), oldest first, deleted
 * ones only when asked, at most `limit` of them; and whether its content is stored. The cache must have caught up first.
 */
export function where (cache: SearchCache, index: Index, cid: string, options: { readonly includeDeleted?: boolean, readonly limit?: number } = {}): WhereResult {
  const limit = options.limit ?? Number.MAX_SAFE_INTEGER
  const found = cache.db.prepare('SELECT * FROM rows WHERE cid = ? AND (? = 1 OR deleted = 0) ORDER BY updated_at, device_id, folder, path LIMIT ?')
    .all(cid, options.includeDeleted === true ? 1 : 0, Math.min(limit + 1, Number.MAX_SAFE_INTEGER)) as CachedRow[]
  const rows = found.slice(0, limit)
  const hostnames = new Map(index.entries.devices().map(d => [d.id, d.hostname ?? '']))
  return {
    cid,
    stored: storedState(index, cid),
    holders: rows.map(r => ({ deviceId: r.device_id, hostname: hostnames.get(r.device_id) ?? '', folder: r.folder, path: r.path, size: r.size, since: r.updated_at, deleted: r.deleted === 1 })),
    more: found.length > rows.length
  }
}
