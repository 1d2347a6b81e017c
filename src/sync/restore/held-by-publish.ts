import { lstat, readlink } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile, fileCid, isCidProfileName, type CidProfileName } from '../../content/index.js'
import type { Index } from '../../index/index.js'
import type { ExtraEntry, HeldEntry } from './delete.js'

/**
 * Whether `--delete` may remove a local entry the tree lacks without losing what no publish holds,
 * and what it was then; undefined when it may not. A file is held when its bytes are stored content
 * (a row naming its CID is not enough: its bytes may live on this disk alone); a symlink when a row
 * of its path names its target; a directory (removed only once empty) when a row names it. Read
 * through the directory the walk checked, never following a link put there since. `profile`
 * hashes a file no row of its path gives a profile for.
 */
export async function heldByPublish (index: Index, entry: Pick<ExtraEntry, 'shown' | 'dir' | 'parent' | 'name'>, profile: CidProfileName): Promise<HeldEntry | undefined> {
  const slash = entry.shown.indexOf('/')
  const folder = entry.shown.slice(0, slash)
  const path = entry.shown.slice(slash + 1)
  const rows = index.entries.devices().flatMap(d => index.entries.get(d.id, folder, path) ?? [])
  if (entry.dir) return rows.length > 0 ? {} : undefined
  const at = join(entry.parent, entry.name)
  const there = await lstat(at).catch(() => undefined)
  if (there === undefined) return undefined
  const seen = { ino: there.ino, size: there.size, mtimeMs: there.mtimeMs }
  if (there.isSymbolicLink()) {
    const target = await readlink(at).catch(() => undefined)
    return target !== undefined && rows.some(r => r.meta?.kind === 'symlink' && r.meta.target === target) ? seen : undefined
  }
  if (!there.isFile()) return undefined
  const profiles = new Set<CidProfileName>([...rows.flatMap(r => isCidProfileName(r.cidProfile) ? [r.cidProfile] : []), profile])
  for (const name of profiles) {
    try {
      const local = (await fileCid(at, cidProfile(name), { inode: { dev: there.dev, ino: there.ino } })).cid.toString()
      if (index.content.lookup(local).length > 0) return seen
    } catch {
      // Changed, replaced or unreadable while it was read: not known to be held, so kept.
      return undefined
    }
  }
  return undefined
}
