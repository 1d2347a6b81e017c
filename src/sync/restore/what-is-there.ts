import type { Stats } from 'node:fs'
import { lstat, readlink } from 'node:fs/promises'
import { fileCid, type CidProfile } from '../../content/index.js'
import type { FileAttrs } from '../../custody/index.js'
import type { Entry } from '../../index/index.js'
import { fixFileAttrs, sameMtime } from './tree.js'
import { fixableInPlace, sameAttrs } from './jobs.js'

/** What to do with a file's target, found as it was before anything was fetched. */
export type ThereVerdict =
  /** Nothing there (`replace` false), or a file to replace once the new one is verified. */
  | { readonly kind: 'fetch', readonly replace: boolean }
  /** The right file: as it was, or given its recorded mode and mtime in place. */
  | { readonly kind: 'done', readonly outcome: 'already-there' | 'written' }
  /** Another file, kept: the reason says why and what to do. */
  | { readonly kind: 'kept', readonly reason: string }

export interface ThereInit {
  readonly row: Entry
  readonly profile: CidProfile
  readonly attrs: FileAttrs
  readonly target: string
  readonly targetDir: string
  /** This run made the target's directory: nothing was there to look at. */
  readonly made: boolean
  readonly overwrite: boolean
  readonly signal?: AbortSignal
  /** This device's own row of the same path, if any. */
  readonly mine: () => Entry | undefined
  /** Whether content of this CID is stored (a version of record, to be brought back). */
  readonly stored: (cid: string) => boolean
}

/**
 * Looks at what is at a file's target before it is fetched. A directory this run made held
 * nothing: its files need no look (a call saved a file); what appears meanwhile is as raced as
 * before any rename, and the rename refuses it.
 */
export async function whatIsThere (init: ThereInit): Promise<ThereVerdict> {
  const { row, target, attrs } = init
  const there = init.made ? undefined : await lstat(target).catch(() => undefined)
  if (there === undefined) return { kind: 'fetch', replace: false }
  const unknown = row.meta === null
  let local: string | undefined
  try {
    local = there.isFile() ? await localCid(target, there, row, init.profile, init) : undefined
  } catch (err) {
    // A local file this user cannot read (mode 0000) cannot be compared: kept unless --overwrite.
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EACCES' && code !== 'EPERM') throw err
    if (!init.overwrite) return { kind: 'kept', reason: `${target} cannot be read to compare (${code}): add --overwrite to replace it` }
    local = ''
  }
  // The same bytes, mtime and, where recorded, mode and owner: right as it is. The same bytes
  // alone: given the rest in place, with nothing fetched, where no other user could have
  // written it since the hash (fixableInPlace); else fetched again onto an inode of its own.
  if (local === row.cid && there.size === row.size && (sameAttrs(there, attrs, unknown) || fixableInPlace(there, attrs, unknown))) {
    if (sameAttrs(there, attrs, unknown) && sameMtime(there, row.mtimeMs)) return { kind: 'done', outcome: 'already-there' }
    await fixFileAttrs(target, init.targetDir, there.ino, attrs, row.mtimeMs, unknown).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPERM' && err.code !== 'EACCES') throw err
      throw Object.assign(new Error(`${target} holds the right bytes, but this user may not set its mode or mtime (${err.code}): run as its owner, or move it aside and run again`, { cause: err }), { code: err.code })
    })
    return { kind: 'done', outcome: 'written' }
  }
  // A symlink where the file was (a type changed on another device): replaced when it is one of record, or with --overwrite.
  if (there.isSymbolicLink() && (init.overwrite || await ownLink(init))) local = ''
  if (local === undefined) return { kind: 'kept', reason: notAFile(target, there) }
  if (local !== row.cid && local !== '' && !replaceable(init, local)) {
    return { kind: 'kept', reason: `${target} holds other content that no publish in this index holds (a local change, or a publish not taken in yet): add --overwrite to replace it` }
  }
  return { kind: 'fetch', replace: true }
}

/**
 * The CID of the local file at `target`, read to its end on the inode `there` (its lstat) saw: a
 * link swapped in since is refused, never followed. '' where --overwrite replaces it whatever it
 * holds: a file of another size is not read (a huge sparse file there costs nothing).
 */
export async function localCid (target: string, there: Stats, row: Entry, profile: CidProfile, init: { readonly overwrite: boolean, readonly signal?: AbortSignal }): Promise<string> {
  if (init.overwrite && there.size !== row.size) return ''
  return (await fileCid(target, profile, { signal: init.signal, inode: { dev: there.dev, ino: there.ino } })).cid.toString()
}

/** Why a target that is not a regular file was kept, and what to do. */
function notAFile (target: string, there: { isSymbolicLink: () => boolean, isDirectory: () => boolean }): string {
  if (there.isSymbolicLink()) return `${target} is a symlink this device did not record: add --overwrite to replace it`
  if (there.isDirectory()) return `${target} is a directory, not a regular file: move it aside and run again`
  return `${target} is not a regular file (a FIFO, a socket or a device): move it aside and run again`
}

/** Whether the symlink there is this device's own of record. */
async function ownLink (init: ThereInit): Promise<boolean> {
  const mine = init.mine()
  return mine?.meta?.kind === 'symlink' && await readlink(init.target).then(t => t === mine.meta?.target, () => false)
}

/** Whether a local file of CID `local` is a version of record: this device's own row, or content stored to be brought back. */
function replaceable (init: ThereInit, local: string): boolean {
  return init.overwrite || init.mine()?.cid === local || init.stored(local)
}

/**
 * For a row whose content is not stored (excluded from storage, or never stored): whether what is
 * at its place (`there`, its lstat) already is that row as the index last saw it (its size, mtime
 * and mode), so nothing needs bringing back. The indexer's own test of an unchanged file; the
 * file is never read.
 */
export function unstoredInPlace (there: Stats | undefined, row: Entry): boolean {
  if (there === undefined || !there.isFile() || there.size !== row.size || !sameMtime(there, row.mtimeMs)) return false
  return row.meta === null || row.meta === undefined || (there.mode & 0o7777) === row.meta.mode
}
