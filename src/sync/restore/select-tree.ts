import { PathNotFoundError } from '../../errors.js'
import type { Entry, Index } from '../../index/index.js'

export interface SelectTreeInit {
  /** `folder/path` prefixes, as `ls` prints them; `''` is everything. */
  readonly prefixes: readonly string[]
  /** One device's tree exactly; absent: each path's newest version across the devices. */
  readonly deviceId?: string
}

/** What `restore --files` brings back, and what it takes from whom. */
export interface SelectedTree {
  /** Live entries to put in place: files, symlinks and directories (a directory's path ends with `/`). */
  readonly rows: readonly Entry[]
  /** `folder/path` of files whose newest version is a deletion: not written, and removed with `--delete`. */
  readonly deleted: ReadonlySet<string>
  /** Paths the devices disagree on, with the device whose version won. */
  readonly disagreements: ReadonlyArray<{ readonly path: string, readonly deviceId: string }>
}

const DIFFER = Symbol('differ')

const under = (shown: string, prefix: string): boolean =>
  prefix === '' || shown === prefix || shown === `${prefix}/` || shown.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`)

/**
 * The tree a `restore --files` makes. Without a device, each path takes its newest row across the
 * devices, by when the change was indexed; a deletion newer than every copy wins too, so another
 * device's delete and rename arrive. With a device, that device's live rows alone.
 */
export function selectTree (index: Index, init: SelectTreeInit): SelectedTree {
  const newest = new Map<string, Entry>()
  // What the first device seen holds of each path, or DIFFER once another holds something else.
  const seen = new Map<string, string | typeof DIFFER>()
  const missing: string[] = []
  for (const wanted of init.prefixes) {
    const prefix = wanted.replace(/^\/+/, '')
    let found = false
    for (const row of index.entries.list({ prefix, deviceId: init.deviceId, includeDeleted: init.deviceId === undefined, dirs: true })) {
      const shown = `${row.folder}/${row.path}`
      if (!under(shown, prefix)) continue
      found ||= !row.deleted
      // What each device holds of the path: the same CID (or deletion) on every device is no disagreement.
      const says = row.deleted ? 'deleted' : `${row.cid ?? ''}:${row.meta?.target ?? ''}`
      const first = seen.get(shown)
      if (first === undefined) seen.set(shown, says)
      else if (first !== says) seen.set(shown, DIFFER)
      const held = newest.get(shown)
      if (held === undefined || row.updatedAt > held.updatedAt || (row.updatedAt === held.updatedAt && held.deleted && !row.deleted)) newest.set(shown, row)
    }
    if (!found) missing.push(wanted)
  }
  if (missing.length > 0) {
    throw new PathNotFoundError(`${missing.map(m => JSON.stringify(m)).join(', ')}: nothing live under ${missing.length === 1 ? 'it' : 'them'} in the index${init.deviceId === undefined ? '' : ` of device ${init.deviceId.slice(0, 8)}`} (paths are folder/path, as \`cidsync ls\` prints them)`)
  }
  const rows: Entry[] = []
  const deleted = new Set<string>()
  const disagreements: Array<{ path: string, deviceId: string }> = []
  for (const [shown, row] of newest) {
    if (row.deleted) deleted.add(shown)
    else rows.push(row)
    if (seen.get(shown) === DIFFER) disagreements.push({ path: shown, deviceId: row.deviceId })
  }
  rows.sort((a, b) => `${a.folder}/${a.path}` < `${b.folder}/${b.path}` ? -1 : 1)
  return { rows, deleted, disagreements: disagreements.sort((a, b) => a.path < b.path ? -1 : 1) }
}
