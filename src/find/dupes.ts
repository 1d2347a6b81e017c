import type { SearchCache } from './search-cache.js'

export interface DupeGroup {
  readonly cid: string
  readonly size: number
  /** Every live copy: device and `folder/path`. */
  readonly copies: ReadonlyArray<{ readonly deviceId: string, readonly folder: string, readonly path: string }>
  /** What keeping one copy would free: size times (copies - 1). */
  readonly reclaimable: number
}

export interface DupesResult {
  readonly groups: DupeGroup[]
  readonly totalReclaimable: number
  /** More groups than were listed (`limit`); the total counts them all. */
  readonly more: boolean
}

/**
 * The same content (CID) live at several paths or devices, at least `minSize` bytes, largest
 * reclaimable first, at most `limit` groups listed (the total counts all). One scan of the
 * cache's CID index (it covers size and deleted). The cache must have caught up first.
 */
export function dupes (cache: SearchCache, options: { readonly minSize?: number, readonly limit?: number } = {}): DupesResult {
  const minSize = options.minSize ?? 1
  const limit = options.limit ?? 1_000
  const groups = cache.db.prepare(`SELECT cid, MAX(size) AS size, COUNT(*) AS n FROM rows INDEXED BY rows_by_cid
    WHERE cid IS NOT NULL AND deleted = 0 GROUP BY cid HAVING n > 1 AND MAX(size) >= ?`).raw().all(minSize) as Array<[string, number, number]>
  let total = 0
  for (const [, size, n] of groups) total += size * (n - 1)
  groups.sort((a, b) => b[1] * (b[2] - 1) - a[1] * (a[2] - 1) || (a[0] < b[0] ? -1 : 1))
  const copiesOf = cache.db.prepare('SELECT device_id AS deviceId, folder, path FROM rows WHERE cid = ? AND deleted = 0 ORDER BY device_id, folder, path')
  return {
    groups: groups.slice(0, limit).map(([cid, size, n]) => ({ cid, size, copies: copiesOf.all(cid) as DupeGroup['copies'], reclaimable: size * (n - 1) })),
    totalReclaimable: total,
    more: groups.length > limit
  }
}
