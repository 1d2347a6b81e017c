import { lstat, readlink } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../../config/index.js'
import { cidProfile, isCidProfileName } from '../../content/index.js'
import type { Entry, Index } from '../../index/index.js'
import { checkFolders, targetRoot, usableRecord } from './get-files.js'
import { restoredAttrs } from './attrs.js'
import { sameMtime, symlinkInPlace } from './tree.js'
import { wayChecker } from './way-checker.js'
import { localCid, unstoredInPlace } from './what-is-there.js'

/** What `restore --files --dry-run` says it would do to one entry. */
export interface PlannedEntry {
  readonly path: string
  readonly kind: 'file' | 'symlink' | 'dir'
  readonly action: 'write' | 'keep' | 'replace' | 'differ' | 'blocked' | 'not-stored'
  readonly target: string
  readonly reason?: string
}

/**
 * Looks at each entry's place without writing anything: absent (`write`), right as it is (`keep`),
 * another version of record (`replace`), a local file that no publish holds (`differ`, kept
 * unless `--overwrite`), in the way of what a restore never replaces (`blocked`: a directory on
 * the way that is a file or a symlink, or a file's place that holds a directory), or content never
 * stored (`not-stored`).
 */
export async function planRestore (index: Index, config: Config, rows: readonly Entry[], init: { to?: string, overwrite?: boolean, own?: string }): Promise<PlannedEntry[]> {
  // What the run would refuse before anything, the dry run refuses alike.
  await checkFolders(config, init.to, rows)
  const planned: PlannedEntry[] = []
  const inTheWay = wayChecker()
  for (const row of rows) {
    const kind = row.meta?.kind ?? 'file'
    const { root, components } = targetRoot(config, init.to, row)
    const target = join(root, ...components)
    const shown = `${row.folder}/${row.path}`
    const add = (action: PlannedEntry['action'], reason?: string): void => { planned.push({ path: shown, kind, action, target, ...(reason === undefined ? {} : { reason }) }) }
    const blocker = await inTheWay(root, components.slice(0, -1))
    if (blocker !== undefined) { add('blocked', blocker); continue }
    const there = await lstat(target).catch(() => undefined)
    if (kind === 'dir') {
      if (there === undefined || there.isDirectory()) add(there === undefined ? 'write' : 'keep')
      else add('blocked', there.isSymbolicLink() ? 'a symlink' : 'not a directory')
      continue
    }
    if (kind === 'symlink') {
      if (there === undefined) add('write')
      else if (there.isDirectory()) add('blocked', 'a directory')
      else if (!there.isSymbolicLink()) add(init.overwrite === true ? 'replace' : 'differ', 'not a symlink')
      else if (!await readlink(target).then(t => t === row.meta?.target, () => false)) add('replace')
      else if (symlinkInPlace(there, row.mtimeMs, restoredAttrs(row.meta, () => {}))) add('keep')
      else add('replace', sameMtime(there, row.mtimeMs) ? 'its owner differs' : 'its mtime differs')
      continue
    }
    const record = usableRecord(index, row)
    // Not stored, but already there as the index last saw it: right as it is, as the run says.
    if (typeof record === 'string') {
      if (unstoredInPlace(there, row)) add('keep')
      else add('not-stored', record)
      continue
    }
    if (there === undefined) { add('write'); continue }
    // A symlink there is replaced with --overwrite, as the run does; anything else not a file stays.
    if (there.isSymbolicLink()) { add(init.overwrite === true ? 'replace' : 'differ', 'a symlink'); continue }
    if (!there.isFile()) { add('blocked', 'not a regular file'); continue }
    if (!isCidProfileName(row.cidProfile)) { add('differ', `unknown CID profile ${row.cidProfile}`); continue }
    // As the run compares it (whatIsThere).
    const local = await localCid(target, there, row, cidProfile(row.cidProfile), { overwrite: init.overwrite === true })
    if (local === '') { add('replace'); continue }
    const modeRight = row.meta === null || (there.mode & 0o7777) === row.meta.mode
    if (local === row.cid) { add(modeRight ? 'keep' : 'replace', modeRight ? undefined : 'its mode differs'); continue }
    const mine = init.own === undefined ? undefined : index.entries.get(init.own, row.folder, row.path)
    const ofRecord = mine?.cid === local || index.content.lookup(local).length > 0
    add(ofRecord || init.overwrite === true ? 'replace' : 'differ', ofRecord ? undefined : 'a local file no publish in this index holds')
  }
  return planned
}
