import { PathNotFoundError } from '../../errors.js'
import type { Entry, Index } from '../../index/index.js'
import { againOptions, shellWord, type AgainOptions } from '../../util/shell-word.js'
import { deletedWhen, deviceOption } from './select-rows.js'

export interface SelectTreeInit {
  /** `folder/path` prefixes, as `ls` prints them; `''` is everything. */
  readonly prefixes: readonly string[]
  /** One device's tree exactly; absent: each path's newest version across the devices. */
  readonly deviceId?: string
  /** `--delete`: a prefix whose newest rows are all deletions is found (its local files go). */
  readonly deleting?: boolean
  /** This run's options a suggested command repeats (`againOptions`). */
  readonly again?: AgainOptions
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
    for (const row of index.entries.list({ prefix, deviceId: init.deviceId, includeDeleted: init.deviceId === undefined, dirs: true })) {
      const shown = `${row.folder}/${row.path}`
      if (!under(shown, prefix)) continue
      // What each device holds of the path: the same CID (or deletion) on every device is no disagreement.
      const says = row.deleted ? 'deleted' : `${row.cid ?? ''}:${row.meta?.target ?? ''}`
      const first = seen.get(shown)
      if (first === undefined) seen.set(shown, says)
      else if (first !== says) seen.set(shown, DIFFER)
      const held = newest.get(shown)
      if (held === undefined || row.updatedAt > held.updatedAt || (row.updatedAt === held.updatedAt && held.deleted && !row.deleted)) newest.set(shown, row)
    }
  }
  // A prefix is found when its newest rows hold something live: one whose every path was deleted
  // since (here or on another device) would restore nothing, and says so. With --delete, its
  // deletions are what it does.
  for (const wanted of init.prefixes) {
    const prefix = wanted.replace(/^\/+/, '')
    let found = false
    for (const [shown, row] of newest) if ((!row.deleted || init.deleting === true) && under(shown, prefix)) { found = true; break }
    if (!found) missing.push(wanted)
  }
  if (missing.length > 0) {
    const hints = missing.map(m => deletedUnder(index, m.replace(/^\/+/, ''), init.deviceId, init.again))
    const absent = missing.filter((_, i) => hints[i] === undefined)
    const said = hints.filter((h): h is string => h !== undefined)
    if (absent.length > 0) said.push(`${absent.map(m => JSON.stringify(m)).join(', ')}: nothing live under ${absent.length === 1 ? 'it' : 'them'} in the index${init.deviceId === undefined ? '' : ` of device ${init.deviceId.slice(0, 8)}`} (paths are folder/path, as \`cidsync ls\` prints them)`)
    throw new PathNotFoundError(said.join('; '))
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

/**
 * For a prefix whose every entry was deleted (only tombstones are left), what brings it back: the
 * newest publish before its last deletion holds at least that file, and its content stays stored.
 */
function deletedUnder (index: Index, prefix: string, deviceId: string | undefined, again: AgainOptions = {}): string | undefined {
  let newest: Entry | undefined
  let newestFile: Entry | undefined
  for (const row of index.entries.list({ prefix, deviceId, includeDeleted: true, dirs: true })) {
    if (!row.deleted || !under(`${row.folder}/${row.path}`, prefix)) continue
    if (newest === undefined || row.updatedAt > newest.updatedAt) newest = row
    if (!row.path.endsWith('/') && (newestFile === undefined || row.updatedAt > newestFile.updatedAt)) newestFile = row
  }
  const when = newest === undefined ? undefined : deletedWhen(newest)
  if (newest === undefined || when === undefined) return undefined
  const exact = `${newest.folder}/${newest.path}`.replace(/\/$/, '') === prefix.replace(/\/$/, '')
  const file = newestFile === undefined ? undefined : `${newestFile.folder}/${newestFile.path}`
  return `${JSON.stringify(prefix)} ${exact ? 'was' : 'holds only what was'} deleted (last on device ${when.device}, ${when.at}): ` +
    `\`cidsync restore --files ${shellWord(prefix)} --at ${when.before}${deviceOption(deviceId)}${againOptions(again)}\` brings back what the last publish before then held` +
    `${file === undefined ? '' : `; \`cidsync log ${shellWord(file)}${againOptions({ ...again, to: undefined })}\` lists every version${file === prefix ? '' : ' of the last file deleted'}`}`
}
