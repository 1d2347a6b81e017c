import { lstat, readlink } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../../config/index.js'
import { cidProfile, fileCid, isCidProfileName } from '../../content/index.js'
import type { Entry, Index } from '../../index/index.js'
import { targetRoot, usableRecord } from './get-files.js'

/** What `restore --files --dry-run` says it would do to one entry. */
export interface PlannedEntry {
  readonly path: string
  readonly kind: 'file' | 'symlink' | 'dir'
  readonly action: 'write' | 'keep' | 'replace' | 'differ' | 'not-stored'
  readonly target: string
  readonly reason?: string
}

/**
 * Looks at each entry's place without writing anything: absent (`write`), right as it is (`keep`),
 * another version of record (`replace`), a local file that no publish holds (`differ`, kept
 * unless `--overwrite`), or content never stored (`not-stored`).
 */
export async function planRestore (index: Index, config: Config, rows: readonly Entry[], init: { to?: string, overwrite?: boolean, own?: string }): Promise<PlannedEntry[]> {
  const planned: PlannedEntry[] = []
  for (const row of rows) {
    const kind = row.meta?.kind ?? 'file'
    const { root, components } = targetRoot(config, init.to, row)
    const target = join(root, ...components)
    const there = await lstat(target).catch(() => undefined)
    const shown = `${row.folder}/${row.path}`
    const add = (action: PlannedEntry['action'], reason?: string): void => { planned.push({ path: shown, kind, action, target, ...(reason === undefined ? {} : { reason }) }) }
    if (kind === 'dir') { add(there === undefined ? 'write' : there.isDirectory() ? 'keep' : 'differ'); continue }
    if (kind === 'symlink') {
      if (there === undefined) add('write')
      else if (!there.isSymbolicLink()) add(init.overwrite === true ? 'replace' : 'differ', 'not a symlink')
      else add(await readlink(target).then(t => t === row.meta?.target, () => false) ? 'keep' : 'replace')
      continue
    }
    const record = usableRecord(index, row)
    if (typeof record === 'string') { add('not-stored', record); continue }
    if (there === undefined) { add('write'); continue }
    if (!there.isFile()) { add(init.overwrite === true ? 'replace' : 'differ', 'not a regular file'); continue }
    if (!isCidProfileName(row.cidProfile)) { add('differ', `unknown CID profile ${row.cidProfile}`); continue }
    const local = (await fileCid(target, cidProfile(row.cidProfile))).cid.toString()
    const modeRight = row.meta === null || (there.mode & 0o7777) === row.meta.mode
    if (local === row.cid) { add(modeRight ? 'keep' : 'replace', modeRight ? undefined : 'its mode differs'); continue }
    const mine = init.own === undefined ? undefined : index.entries.get(init.own, row.folder, row.path)
    const ofRecord = mine?.cid === local || index.content.lookup(local).length > 0
    add(ofRecord || init.overwrite === true ? 'replace' : 'differ', ofRecord ? undefined : 'a local file no publish holds')
  }
  return planned
}
