import type { SearchCache } from './search-cache.js'

export interface DupeGroup {
  readonly cid: string
  readonly size: number
  /** Every live copy: device and `folder/path`. */
  readonly copies: ReadonlyArray<{ readonly deviceId: string, readonly folder: string, readonly path: string }>
  /** The copies on this device. */
  readonly here: number
  /**
   * What keeping one copy here would free here: size times (copies here - 1). Another device's
   * copy frees nothing on this one, so it never counts.
   */
  readonly reclaimable: number
}

export interface DupesResult {
  readonly groups: DupeGroup[]
  /** Bytes reclaimable on this device, over every group. */
  readonly totalReclaimable: number
  /** More groups than were listed (`limit`); the total counts them all. */
  readonly more: boolean
}

/**
 * The same content (CID) live at several paths or devices, at least `minSize` bytes, most
 * reclaimable on this device (`own`) first, at most `limit` groups listed (the total counts all).
 * One scan of the cache's CID index (it covers size, deleted and device). The cache must have caught up first.
 */
export function dupes (cache: SearchCache, options: { readonly own?: string | undefined, readonly minSize?: number, readonly limit?: number } = {}): DupesResult {
  const minSize = options.minSize ?? 1
  const limit = options.limit ?? 1_000
  // Streamed: the total sums every group, and only the `limit` largest are kept (a bounded heap),
  // so a million groups are never held or sorted at once.
  const rows = cache.db.prepare(`SELECT cid, MAX(size) AS size, COUNT(*) AS n, SUM(device_id = ?) AS here FROM rows INDEXED BY rows_by_cid_device
    WHERE cid IS NOT NULL AND deleted = 0 GROUP BY cid HAVING n > 1 AND MAX(size) >= ?`).raw().iterate(options.own ?? '', minSize) as IterableIterator<[string, number, number, number]>
  let total = 0
  let count = 0
  const top = new TopGroups(limit)
  for (const [cid, size, n, here] of rows) {
    total += reclaimable({ size, here })
    count++
    top.offer({ cid, size, n, here })
  }
  const groups = top.sorted()
  const copiesOf = cache.db.prepare('SELECT device_id AS deviceId, folder, path FROM rows WHERE cid = ? AND deleted = 0 ORDER BY device_id, folder, path')
  return {
    groups: groups.map(g => ({ cid: g.cid, size: g.size, copies: copiesOf.all(g.cid) as DupeGroup['copies'], here: g.here, reclaimable: reclaimable(g) })),
    totalReclaimable: total,
    more: count > limit
  }
}

const reclaimable = (g: { readonly size: number, readonly here: number }): number => g.size * Math.max(0, g.here - 1)

interface Group { readonly cid: string, readonly size: number, readonly n: number, readonly here: number }

/**
 * Larger reclaimable here first; then more bytes in extra copies anywhere; equal ones by CID, so
 * the order is the same on every run.
 */
function before (a: Group, b: Group): boolean {
  const ra = reclaimable(a)
  const rb = reclaimable(b)
  if (ra !== rb) return ra > rb
  const sa = a.size * (a.n - 1)
  const sb = b.size * (b.n - 1)
  return sa !== sb ? sa > sb : a.cid < b.cid
}

/** The `limit` groups that sort first, kept in a min-heap (its root: the one that sorts last). */
class TopGroups {
  private readonly heap: Group[] = []
  constructor (private readonly limit: number) {}

  offer (group: Group): void {
    if (this.limit <= 0) return
    if (this.heap.length < this.limit) {
      this.heap.push(group)
      this.up(this.heap.length - 1)
    } else if (before(group, this.heap[0] as Group)) {
      this.heap[0] = group
      this.down(0)
    }
  }

  sorted (): Group[] {
    return [...this.heap].sort((a, b) => before(a, b) ? -1 : 1)
  }

  private up (i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(this.heap[parent] as Group, this.heap[i] as Group)) return
      this.swap(i, parent)
      i = parent
    }
  }

  private down (i: number): void {
    for (;;) {
      const left = 2 * i + 1
      const right = left + 1
      let last = i
      if (left < this.heap.length && before(this.heap[last] as Group, this.heap[left] as Group)) last = left
      if (right < this.heap.length && before(this.heap[last] as Group, this.heap[right] as Group)) last = right
      if (last === i) return
      this.swap(i, last)
      i = last
    }
  }

  private swap (a: number, b: number): void {
    const t = this.heap[a] as Group
    this.heap[a] = this.heap[b] as Group
    this.heap[b] = t
  }
}
