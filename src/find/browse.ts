import type { Index } from '../index/index.js'
import type { SearchCache } from './search-cache.js'
import { storedState, type StoredState } from './stored-state.js'

/** Rows one listing reads at most: a folder of millions lists its first ones and says so. */
export const MAX_BROWSE_ROWS = 20_000

export interface Listing {
  readonly devices: ReadonlyArray<{ readonly id: string, readonly hostname: string }>
  readonly deviceId: string | null
  readonly prefix: string
  readonly dirs: ReadonlyArray<{ readonly name: string, readonly files: number, readonly bytes: number }>
  readonly files: ReadonlyArray<{ readonly name: string, readonly size: number, readonly mtime: string, readonly cid: string | null, readonly stored: StoredState }>
  readonly truncated: boolean
}

/**
 * One level of a device's tree: at `''` its folders, else the directories and files right under
 * `prefix` (`folder/` or `folder/dir/`), live files only, from the search cache (caught up first).
 */
export function browse (cache: SearchCache, index: Index, deviceId: string | undefined, prefix: string, own?: string): Listing {
  const devices = index.entries.devices().map(d => ({ id: d.id, hostname: d.hostname ?? '' }))
  // Unasked, this device's tree (as `cidsync ls` lists), not whichever id sorts first.
  const device = deviceId ?? (devices.some(d => d.id === own) ? own : devices[0]?.id)
  if (device === undefined) return { devices, deviceId: null, prefix, dirs: [], files: [], truncated: false }
  if (prefix === '') {
    const folders = cache.db.prepare('SELECT folder AS name, COUNT(*) AS files, COALESCE(SUM(size), 0) AS bytes FROM rows WHERE device_id = ? AND deleted = 0 GROUP BY folder ORDER BY folder').all(device) as Listing['dirs']
    return { devices, deviceId: device, prefix, dirs: folders, files: [], truncated: false }
  }
  const slash = prefix.indexOf('/')
  const folder = slash === -1 ? prefix : prefix.slice(0, slash)
  const under = slash === -1 ? '' : prefix.slice(slash + 1)
  const rows = cache.db.prepare(`SELECT path, size, mtime_ms, cid FROM rows WHERE device_id = ? AND folder = ? AND path >= ? AND path < ? AND deleted = 0
    ORDER BY path LIMIT ?`).raw().all(device, folder, under, `${under}\u{10ffff}`, MAX_BROWSE_ROWS + 1) as Array<[string, number, number, string | null]>
  const dirs = new Map<string, { files: number, bytes: number }>()
  const files: Array<Listing['files'][number]> = []
  for (const [path, size, mtime, cid] of rows.slice(0, MAX_BROWSE_ROWS)) {
    const rest = path.slice(under.length)
    const next = rest.indexOf('/')
    if (next === -1) {
      files.push({ name: rest, size, mtime: new Date(mtime).toISOString(), cid, stored: storedState(index, cid) })
    } else {
      const dir = dirs.get(rest.slice(0, next)) ?? { files: 0, bytes: 0 }
      dir.files++
      dir.bytes += size
      dirs.set(rest.slice(0, next), dir)
    }
  }
  return { devices, deviceId: device, prefix, dirs: [...dirs].map(([name, d]) => ({ name, ...d })), files, truncated: rows.length > MAX_BROWSE_ROWS }
}
