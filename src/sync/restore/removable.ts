import { lstat, readlink } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile, fileCid, isCidProfileName } from '../../content/index.js'
import type { Entry, Index } from '../../index/index.js'
import type { ExtraEntry, HeldEntry } from './delete.js'

/**
 * Whether `--delete` may remove a local entry the tree lacks, and what it was then; undefined when
 * it may not. A file goes when the newest row of its path is another device's (live, or a deletion,
 * which keeps the last CID) and names its bytes: that device's change (a deletion, a rename) is
 * what the tree took, and these bytes are what it changed. Any other bytes are this device's own
 * (made or edited here, or never stored): kept, whatever stored content says, since a prune may
 * have dropped it. A symlink goes when that row names its target; a directory (removed only once
 * empty) when any row names it. Read through the directory the walk checked, never following a
 * link put there since.
 */
export async function removableEntry (index: Index, entry: Pick<ExtraEntry, 'shown' | 'dir' | 'parent' | 'name'>, own: string | undefined): Promise<HeldEntry | undefined> {
  const slash = entry.shown.indexOf('/')
  const folder = entry.shown.slice(0, slash)
  const path = entry.shown.slice(slash + 1)
  const rows = index.entries.devices().flatMap(d => index.entries.get(d.id, folder, path) ?? [])
  if (entry.dir) return rows.length > 0 ? {} : undefined
  // The change the tree took for this path: the newest row across the devices. Only it speaks
  // for the bytes; a bystander's copy of this device's edit does not.
  const newest = rows.reduce<Entry | undefined>((a, r) => a === undefined || r.updatedAt > a.updatedAt ? r : a, undefined)
  if (newest === undefined || newest.deviceId === own) return undefined
  const at = join(entry.parent, entry.name)
  const there = await lstat(at).catch(() => undefined)
  if (there === undefined) return undefined
  const seen = { ino: there.ino, size: there.size, mtimeMs: there.mtimeMs, ctimeMs: there.ctimeMs }
  if (there.isSymbolicLink()) {
    const target = await readlink(at).catch(() => undefined)
    return newest.meta?.kind === 'symlink' && target === newest.meta.target ? seen : undefined
  }
  if (!there.isFile() || newest.cid === null || newest.cid === undefined || newest.size !== there.size || !isCidProfileName(newest.cidProfile)) return undefined
  try {
    const local = (await fileCid(at, cidProfile(newest.cidProfile), { inode: { dev: there.dev, ino: there.ino } })).cid.toString()
    return local === newest.cid ? seen : undefined
  } catch {
    // Changed, replaced or unreadable while it was read: not known to be theirs, so kept.
    return undefined
  }
}
