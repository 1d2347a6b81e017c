import { readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../../config/index.js'
import { parseContentRecord, type ContentRecord } from '../../custody/index.js'
import { TargetDiskFullError, UsageError } from '../../errors.js'
import type { Entry, Index, StoredContentRow } from '../../index/index.js'
import { processAlive } from '../../util/process-alive.js'
import { safeComponents } from './safe-target.js'

/** Where a row's file goes, under `--to` or its folder's configured path. */
export function targetRoot (config: Config, to: string | undefined, row: Entry): { root: string, components: string[] } {
  // A directory's row ends with `/`: the directory itself is its last component.
  const components = safeComponents(`${row.folder}/${row.path.endsWith('/') ? row.path.slice(0, -1) : row.path}`)
  if (to !== undefined) return { root: to, components }
  const folder = config.folders.find(f => f.name === row.folder)
  if (folder === undefined) throw new UsageError(`${row.folder}/${row.path}: this device has no folder "${row.folder}" in its config: bring it back with --to DIR`)
  return { root: folder.path, components: components.slice(1) }
}

/**
 * Without `--to`, each folder the rows are in must be in the config and where it says: said once,
 * before anything is fetched or written, not once per file. A folder the config does not have (a
 * new device whose folders are named otherwise), or whose path is not a directory (an unmounted
 * disk), is a `UsageError` naming each.
 */
export async function checkFolders (config: Config, to: string | undefined, rows: readonly Entry[]): Promise<void> {
  if (to !== undefined) return
  const names = new Set(rows.map(r => r.folder))
  const unknown = [...names].filter(name => !config.folders.some(f => f.name === name))
  if (unknown.length > 0) {
    const theirs = rows.filter(r => unknown.includes(r.folder))
    const files = theirs.filter(r => (r.meta?.kind ?? 'file') === 'file').length
    const others = theirs.length - files
    const what = `${files === 1 ? '1 file' : `${files} files`}${others === 0 ? '' : ` and ${others === 1 ? '1 directory or symlink' : `${others} directories and symlinks`}`}`
    throw new UsageError(`${what} ${theirs.length === 1 ? 'is' : 'are'} in ${unknown.length === 1 ? 'a folder' : 'folders'} this device's config does not have (${unknown.map(n => JSON.stringify(n)).join(', ')}; it has ${config.folders.length === 0 ? 'none' : config.folders.map(f => JSON.stringify(f.name)).join(', ')}): ` +
      'bring them back with --to DIR, or add a [[folders]] table with that name and where it goes here')
  }
  const missing: string[] = []
  for (const folder of config.folders) {
    if (names.has(folder.name) && (await stat(folder.path).catch(() => undefined))?.isDirectory() !== true) missing.push(`${JSON.stringify(folder.name)} at ${folder.path}`)
  }
  if (missing.length > 0) {
    const one = missing.length === 1
    throw new UsageError(`${one ? 'the folder' : 'the folders'} ${missing.join(', ')} ${one ? 'is' : 'are'} not there (an unmounted disk?): nothing was brought back. ` +
      `Mount ${one ? 'it' : 'them'}; on a new device, create ${one ? 'it' : 'them'} (mkdir -p); or bring the files back with --to DIR`)
  }
}

/**
 * The first record of the row's content this device can use, parsed; or why there is none.
 * `storedRows`: the row's records when the caller looked them up already ({@link RecordsAhead}).
 */
export function usableRecord (index: Index, row: Entry, storedRows: readonly StoredContentRow[] = index.content.lookup(row.cid ?? '')): ContentRecord | string {
  return firstUsable(storedRows)
}

/** The first of `storedRows` that parses, or why none does. */
export function firstUsable (storedRows: readonly StoredContentRow[]): ContentRecord | string {
  const problems: string[] = []
  for (const stored of storedRows) {
    try {
      return parseContentRecord({ cid: stored.cid, size: stored.size, sealing: stored.sealing, keyId: stored.keyId, keySalt: stored.keySalt, objects: JSON.parse(stored.objects) as unknown })
    } catch (err) {
      problems.push((err as Error).message)
    }
  }
  return problems[0] ?? 'its content was never stored: on the device that has it, its folder needs `store = true`, and the file must not be in `[content] exclude` nor past `[content] max_file_size`; `cidsync snapshot` there stores what is pending'
}

/** How many rows' records {@link RecordsAhead} looks up at once. */
export const RECORDS_AHEAD = 1000

/** Where a restore takes its rows' content records from: each CID's, newest first. */
export type RecordLookup = (cids: readonly string[]) => Map<string, StoredContentRow[]>

/**
 * The content records of a restore's rows, looked up a batch of rows at a time as the rows are
 * checked in order: one statement a batch instead of one a file, and never all of a large
 * restore's records in memory at once.
 */
export class RecordsAhead {
  private batch = -1
  private found = new Map<string, StoredContentRow[]>()

  constructor (private readonly lookup: RecordLookup, private readonly rows: readonly Entry[]) {}

  /** Row `at`'s records, newest first. */
  of (at: number): readonly StoredContentRow[] {
    const batch = Math.floor(at / RECORDS_AHEAD)
    if (batch !== this.batch) {
      const cids = this.rows.slice(batch * RECORDS_AHEAD, (batch + 1) * RECORDS_AHEAD).flatMap(r => r.cid === null ? [] : [r.cid])
      this.found = this.lookup([...new Set(cids)])
      this.batch = batch
    }
    const cid = this.rows[at]?.cid
    return cid == null ? [] : this.found.get(cid) ?? []
  }
}

/** Objects a killed `get` or `restore --files` fetched (`content-fetch/<pid>`), removed once their process is gone. */
export async function removeDeadFetches (fetchDir: string): Promise<void> {
  for (const name of await readdir(fetchDir).catch(() => [] as string[])) {
    if (!/^\d{1,10}$/.test(name) || Number(name) === process.pid || processAlive(Number(name))) continue
    await rm(join(fetchDir, name), { recursive: true, force: true })
  }
}

/** A write refused for want of room, said as what it means and what to do. */
export function diskFull (err: unknown, config: Config, to: string | undefined, folder: string): TargetDiskFullError | undefined {
  const code = (err as NodeJS.ErrnoException).code
  if (code !== 'ENOSPC' && code !== 'EDQUOT') return undefined
  const where = to ?? config.folders.find(f => f.name === folder)?.path ?? 'the target'
  return new TargetDiskFullError(`it did not fit: the disk (or quota) holding ${where} (or the state dir ${config.stateDir}, where objects are fetched first) is full (${code}): free some space and run again; ` +
    'files already brought back are kept, and nothing half-written is left', { cause: err })
}

