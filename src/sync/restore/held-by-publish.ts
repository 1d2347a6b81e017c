import { lstat, readlink } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile, fileCid, isCidProfileName, type CidProfileName } from '../../content/index.js'
import type { Index } from '../../index/index.js'
import type { ExtraEntry } from './delete.js'

/**
 * Whether `--delete` may remove a local entry the tree lacks without losing what no publish holds:
 * a file whose bytes are a version a row of its path names, or content stored; a symlink whose
 * target a row of its path names; a directory (removed only once empty) a row names. Read through
 * the directory the walk checked, never following a link put there since. `profile` hashes a file
 * no row of its path gives a profile for.
 */
export async function heldByPublish (index: Index, entry: Pick<ExtraEntry, 'shown' | 'dir' | 'parent' | 'name'>, profile: CidProfileName): Promise<boolean> {
  const slash = entry.shown.indexOf('/')
  const folder = entry.shown.slice(0, slash)
  const path = entry.shown.slice(slash + 1)
  const rows = index.entries.devices().flatMap(d => index.entries.get(d.id, folder, path) ?? [])
  if (entry.dir) return rows.length > 0
  const at = join(entry.parent, entry.name)
  const there = await lstat(at).catch(() => undefined)
  if (there === undefined) return false
  if (there.isSymbolicLink()) {
    const target = await readlink(at).catch(() => undefined)
    return target !== undefined && rows.some(r => r.meta?.kind === 'symlink' && r.meta.target === target)
  }
  if (!there.isFile()) return false
  const cids = new Set(rows.flatMap(r => r.cid === null || r.cid === undefined ? [] : [r.cid]))
  const profiles = new Set<CidProfileName>([...rows.flatMap(r => isCidProfileName(r.cidProfile) ? [r.cidProfile] : []), profile])
  for (const name of profiles) {
    try {
      const local = (await fileCid(at, cidProfile(name), { inode: { dev: there.dev, ino: there.ino } })).cid.toString()
      if (cids.has(local) || index.content.lookup(local).length > 0) return true
    } catch {
      // Changed, replaced or unreadable while it was read: not known to be held, so kept.
      return false
    }
  }
  return false
}
