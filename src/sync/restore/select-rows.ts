import { PathNotFoundError } from '../../errors.js'
import type { Entry, Index } from '../../index/index.js'
import { isoTime } from '../../util/iso-time.js'
import { safeText } from '../../util/safe-text.js'
import { againOptions, shellWord, type AgainOptions } from '../../util/shell-word.js'

export interface SelectRowsInit {
  /** `folder/path` as `ls` prints them: each an exact file, or with `prefix` everything under it. */
  readonly paths: readonly string[]
  readonly prefix: boolean
  /** Only this device's rows; absent: each path's newest row across the devices. */
  readonly deviceId?: string
  /** This device's id, when it has one. */
  readonly own?: string
  /** This run's options a suggested command repeats: see {@link againOptions}. */
  readonly again?: AgainOptions
}

/**
 * The live rows a `get` brings back: one per `folder/path`. Without a device, each path's most
 * recently written row across the devices (another device's edit arrives); on a tie, this device's.
 * A path that matches nothing is a {@link PathNotFoundError} (exit 3) naming it.
 */
export function selectRows (index: Index, init: SelectRowsInit): Entry[] {
  const chosen = new Map<string, Entry>()
  const missing: string[] = []
  for (const wanted of init.paths) {
    const trimmed = wanted.replace(/^\/+/, '')
    const rows = index.entries.list({ prefix: trimmed, deviceId: init.deviceId })
      .filter(e => !e.deleted && (init.prefix ? (trimmed === '' || `${e.folder}/${e.path}` === trimmed || `${e.folder}/${e.path}`.startsWith(trimmed.endsWith('/') ? trimmed : `${trimmed}/`)) : `${e.folder}/${e.path}` === trimmed))
    if (rows.length === 0) missing.push(wanted)
    for (const row of rows) {
      const key = `${row.folder}/${row.path}`
      const held = chosen.get(key)
      const better = held === undefined || row.updatedAt > held.updatedAt || (row.updatedAt === held.updatedAt && row.deviceId === init.own)
      if (better) chosen.set(key, row)
    }
  }
  if (missing.length > 0) {
    const hints = init.prefix ? [] : missing.map(m => deletedHint(index, m.replace(/^\/+/, ''), init.deviceId, init.again) ?? folderHint(index, m.replace(/^\/+/, '').replace(/\/+$/, ''), init.deviceId, init.again))
    const absent = missing.filter((_, i) => hints[i] === undefined)
    const said = hints.filter((h): h is string => h !== undefined)
    if (absent.length > 0) said.push(`${absent.map(m => JSON.stringify(m)).join(', ')}: not in the index${init.deviceId === undefined ? '' : ` of device ${init.deviceId.slice(0, 8)}`} (paths are folder/path, as \`cidsync ls\` prints them)${foldersHint(index, absent)}`)
    throw new PathNotFoundError(said.join('; '))
  }
  return [...chosen.values()].sort((a, b) => `${a.folder}/${a.path}`.localeCompare(`${b.folder}/${b.path}`))
}

/**
 * For a path whose file was deleted (only its tombstone is left), what brings it back: the
 * content of its last version stays stored, and the newest publish before the deletion holds it.
 */
function deletedHint (index: Index, wanted: string, deviceId: string | undefined, again: AgainOptions = {}): string | undefined {
  const newest = index.entries.list({ prefix: wanted, deviceId, includeDeleted: true })
    .filter(e => e.deleted && `${e.folder}/${e.path}` === wanted)
    .sort((a, b) => b.updatedAt - a.updatedAt)[0]
  const when = newest === undefined ? undefined : deletedWhen(newest)
  if (when === undefined) return undefined
  const shell = shellWord(wanted)
  return `${JSON.stringify(wanted)} was deleted (on device ${when.device}, ${when.at}): ` +
    `\`cidsync get ${shell} --at ${when.before}${deviceOption(deviceId)}${againOptions(again)}\` brings back the version the last publish before then held; \`cidsync log ${shell}${againOptions({ ...again, to: undefined })}\` lists every version`
}

/**
 * A deletion's row as a hint says it: its device, when, and the `--at` time just before (whose
 * publish still held the file). Undefined for a time no date holds (a damaged row): no hint then.
 */
export function deletedWhen (row: Entry): { readonly device: string, readonly at: string, readonly before: string } | undefined {
  const at = isoTime(row.updatedAt)
  const before = isoTime(row.updatedAt - 1)
  return at === undefined || before === undefined ? undefined : { device: safeText(row.deviceId.slice(0, 8)), at, before }
}

/** `--device ID` for a suggested command, when one device was asked for. */
export function deviceOption (deviceId: string | undefined): string {
  return deviceId === undefined ? '' : ` --device ${shellWord(deviceId)}`
}

/** For a path that is a directory of files: what brings them back (`get` takes files). */
function folderHint (index: Index, wanted: string, deviceId: string | undefined, again: AgainOptions = {}): string | undefined {
  if (wanted === '') return undefined
  const under = new Set(index.entries.list({ prefix: `${wanted}/`, deviceId }).map(e => `${e.folder}/${e.path}`).filter(p => p.startsWith(`${wanted}/`)))
  const shell = shellWord(wanted)
  if (under.size === 0) {
    // A directory recorded with nothing under it: its own row, not a file.
    const empty = index.entries.list({ prefix: `${wanted}/`, deviceId, dirs: true }).some(e => `${e.folder}/${e.path}` === `${wanted}/`)
    return empty ? `${JSON.stringify(wanted)} is an empty directory: \`cidsync get\` takes files; \`cidsync restore --files ${shell}${againOptions(again)}\` makes it` : undefined
  }
  return `${JSON.stringify(wanted)} is a directory (${under.size === 1 ? '1 file' : `${under.size} files`} under it): \`cidsync get\` takes files; \`cidsync restore --files ${shell}${deviceOption(deviceId)}${againOptions(again)}\` brings back everything under it`
}

/** When a path asked for names no folder the index holds (a typo, a path from the disk): which ones it holds, as `ls` says. */
function foldersHint (index: Index, absent: readonly string[]): string {
  const folders = [...new Set(index.entries.devices().flatMap(d => index.entries.totals(d.id).map(t => t.folder)))].sort()
  const unknown = absent.some(m => !folders.includes(m.replace(/^\/+/, '').split('/')[0] ?? ''))
  if (!unknown) return ''
  return folders.length === 0 ? '; the index holds no folder yet' : `; its folders are ${folders.map(f => JSON.stringify(f)).join(', ')}`
}

/**
 * For rows chosen from another device where this device deleted the path after that copy was
 * written: what to say, since the copy brought back is older than what this device last had (a
 * user who deleted a file here and asks for it back may want their own last version).
 */
export function olderThanOwnDeletion (index: Index, rows: readonly Entry[], own: string | undefined, again: AgainOptions = {}): string[] {
  if (own === undefined) return []
  const notes: string[] = []
  for (const row of rows) {
    if (row.deviceId === own) continue
    const mine = index.entries.list({ prefix: `${row.folder}/${row.path}`, deviceId: own, includeDeleted: true })
      .find(e => e.deleted && e.folder === row.folder && e.path === row.path)
    if (mine === undefined || mine.updatedAt <= row.updatedAt) continue
    const wanted = `${row.folder}/${row.path}`
    const deleted = deletedWhen(mine)
    const written = isoTime(row.updatedAt)
    if (deleted === undefined || written === undefined) continue
    notes.push(`${JSON.stringify(wanted)}: this device deleted its copy (${deleted.at}); this is device ${safeText(row.deviceId.slice(0, 8))}'s, written before that (${written}): \`cidsync get ${shellWord(wanted)} --at ${deleted.before}${againOptions(again)}\` brings back this device's last version`)
  }
  return notes
}

