import { constants, type Dirent } from 'node:fs'
import { lstat, open, readdir, realpath, rmdir, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../../config/index.js'
import { TargetPathError } from '../../errors.js'
import type { Entry } from '../../index/index.js'
import { fdPath } from '../../util/fd-path.js'
import { wayChecker } from './way-checker.js'

/** What a removable entry was when it was checked: a removal refuses one changed since. */
export interface HeldEntry { readonly ino?: number, readonly size?: number, readonly mtimeMs?: number, readonly ctimeMs?: number }

/** A local entry the restored tree does not have: removed by `restore --files --delete`. */
export interface ExtraEntry {
  /** `folder/path`, as `ls` prints it (a directory's with `/` after it). */
  readonly shown: string
  readonly path: string
  readonly dir: boolean
  /** Where its directory really was when walked: removal goes through that directory alone. */
  readonly parent: string
  readonly name: string
  /** This device's own (no other device had it as it is: made or edited here): kept, never removed. */
  readonly own?: true
  /** What it was when it was found removable: removed only while it still is. */
  readonly seen?: HeldEntry
}

/** Entries looked at, at most: a walk of a tree past this is cut short and says so. */
const MAX_WALKED = 10_000_000

/** A temp of a restore or `get` (`.NAME.cidsync-<hex>.part`): never the user's, never removed here. */
const TEMP = /^\.[\s\S]+\.cidsync-[0-9a-f]{12}\.part$/

/**
 * The local files, symlinks and directories under the restored prefixes that the tree does not
 * have: each folder's ignored paths and cidsync's own dirs are never among them (they are in no
 * publish), nor is a directory that holds something kept. With `removable`, an entry it does not
 * allow is marked `own` and kept, as is what holds it.
 */
export async function extraEntries (config: Config, to: string | undefined, rows: readonly Entry[], prefixes: readonly string[], removable?: (entry: Pick<ExtraEntry, 'shown' | 'dir' | 'parent' | 'name'>) => Promise<HeldEntry | undefined>): Promise<ExtraEntry[]> {
  const { createIgnoreMatcher } = await import('../../watch/index.js')
  const keep = new Set<string>()
  for (const row of rows) {
    const shown = `${row.folder}/${row.path}`
    keep.add(shown.endsWith('/') ? shown.slice(0, -1) : shown)
    // Every directory above a kept entry is kept.
    for (let at = shown.lastIndexOf('/'); at > 0; at = shown.lastIndexOf('/', at - 1)) keep.add(shown.slice(0, at))
  }
  const extra: ExtraEntry[] = []
  let walked = 0
  for (const folder of config.folders) {
    const wanted = prefixes.map(p => p.replace(/^\/+/, '').replace(/\/+$/, '')).filter(p => p === '' || p === folder.name || p.startsWith(`${folder.name}/`))
    if (wanted.length === 0) continue
    const root = to === undefined ? folder.path : join(to, folder.name)
    // Under --to, the folder's directory is the restore's own, as writes require: a symlink there
    // would send the removals elsewhere. A configured folder's path may be a symlink: the user's.
    const realRoot = to === undefined ? await realpath(root).catch(() => undefined) : await rootUnder(to, folder.name)
    if (realRoot === undefined) continue
    const ignore = createIgnoreMatcher(folder.ignore, (folder.exclude ?? []).map(e => e.path))
    const walk = async (rel: string): Promise<boolean> => {
      let names: Dirent[]
      try {
        // Read where removals go: a directory swapped for a link since is refused there (removeExtra).
        names = await readdir(rel === '' ? realRoot : join(realRoot, rel), { withFileTypes: true })
      } catch {
        return true
      }
      let kept = false
      for (const entry of names) {
        if (++walked > MAX_WALKED) throw new TargetPathError(`more than ${MAX_WALKED} local entries under the restored folders: --delete stopped before removing anything`)
        const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`
        const shown = `${folder.name}/${childRel}`
        const inScope = wanted.some(w => w === folder.name || w === '' || shown === w || shown.startsWith(`${w}/`) || w.startsWith(`${shown}/`))
        // Special files are never indexed (listed as skipped): no publish has them, and none removes them.
        const special = entry.isFIFO() || entry.isSocket() || entry.isBlockDevice() || entry.isCharacterDevice()
        if (!inScope || ignore(childRel) || TEMP.test(entry.name) || special) { kept = true; continue }
        // In scope but not within a prefix: a directory above one, walked for what is under it.
        const within = wanted.some(w => w === '' || w === folder.name || shown === w || shown.startsWith(`${w}/`))
        const dir = entry.isDirectory()
        // A directory's own entries first: one that holds something kept is kept.
        if (dir && await walk(childRel)) { kept = true; continue }
        // A file where a directory above the prefix would be is not the prefix's to remove.
        if (keep.has(shown) || !within) { kept = true; continue }
        const listed = { shown: dir ? `${shown}/` : shown, path: join(root, childRel), dir, parent: rel === '' ? realRoot : join(realRoot, rel), name: entry.name }
        const held = removable === undefined ? {} : await removable(listed)
        if (held === undefined) {
          kept = true
          extra.push({ ...listed, own: true })
        } else {
          extra.push(held.ino === undefined ? listed : { ...listed, seen: held })
        }
      }
      return kept
    }
    await walk('')
  }
  return extra
}

/**
 * Removes one extra entry, through its directory as the kernel names it: a directory swapped for
 * a symlink since the walk is refused, never followed (it could lead to any file of this user's).
 * A directory is removed only when empty.
 */
export async function removeExtra (entry: ExtraEntry): Promise<void> {
  const handle = await open(entry.parent, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch((err: NodeJS.ErrnoException) => {
    // O_NOFOLLOW and O_DIRECTORY refuse a symlink or a file put where the directory was.
    if (err.code === 'ELOOP' || err.code === 'ENOTDIR') throw new TargetPathError(`${entry.parent} is no longer a directory (a symlink put in its way?): nothing was removed through it`, { cause: err })
    throw err
  })
  try {
    const where = fdPath(handle.fd) ?? await realpath(entry.parent)
    if (where !== entry.parent) throw new TargetPathError(`${entry.parent} changed while it was cleaned (now ${where}): a symlink put in its way? Nothing was removed through it`)
    // Through the descriptor's own directory where the system names it: the path is not looked up again.
    const path = fdPath(handle.fd) === undefined ? join(entry.parent, entry.name) : `/proc/self/fd/${handle.fd}/${entry.name}`
    // Saved over or edited since it was checked: those bytes are this device's own now.
    if (entry.seen !== undefined) {
      const now = await lstat(path).catch(() => undefined)
      if (now === undefined || now.ino !== entry.seen.ino || now.size !== entry.seen.size || now.mtimeMs !== entry.seen.mtimeMs || now.ctimeMs !== entry.seen.ctimeMs) {
        throw new TargetPathError(`${entry.shown} changed after --delete checked it: kept; run the restore again`)
      }
    }
    try {
      if (entry.dir) await rmdir(path)
      else await unlink(path)
    } catch (err) {
      throw notRemoved(err, entry)
    }
  } finally {
    await handle.close()
  }
}

/**
 * A removal the system refused, said of the entry's own path (not the descriptor's path it went
 * through), with what to do; its code kept.
 */
function notRemoved (err: unknown, entry: ExtraEntry): unknown {
  const code = (err as NodeJS.ErrnoException).code
  const why = code === 'ENOTEMPTY' || code === 'EEXIST'
    ? 'it holds entries --delete keeps (ignored, or no other device had them as they are)'
    : code === 'EPERM' || code === 'EACCES'
      ? `the system refused (${code}): an immutable or append-only file (lsattr), or a directory this user may not write (chmod u+w)`
      : undefined
  if (why === undefined) return err
  return Object.assign(new Error(why, { cause: err }), { code })
}

/** Deleted paths looked up at the target, at most: past it, {@link deletedStillThere} does not say. */
const MAX_DELETED_LOOKED_UP = 200_000

/**
 * The paths the index holds as deleted (`folder/path`) that are still at the target, sorted: a
 * restore without `--delete` keeps them, and names them. Undefined when there are too many to
 * look up. A path counts when lstat finds anything at it through real directories alone: under a
 * symlinked directory it is not the tree's (`--delete` removes the link, not what it leads to).
 */
export async function deletedStillThere (config: Config, to: string | undefined, deleted: ReadonlySet<string>): Promise<string[] | undefined> {
  if (deleted.size > MAX_DELETED_LOOKED_UP) return undefined
  const { createIgnoreMatcher } = await import('../../watch/index.js')
  const roots = new Map(config.folders.map(f => [f.name, to === undefined ? f.path : join(to, f.name)]))
  // What --delete never removes is not said to be removable: ignored paths, special files.
  const ignored = new Map(config.folders.map(f => [f.name, createIgnoreMatcher(f.ignore, (f.exclude ?? []).map(e => e.path))]))
  // The directories on each path's way, looked at once each: a symlink or a file stops it.
  const inTheWay = wayChecker()
  const there: string[] = []
  for (const shown of deleted) {
    const slash = shown.indexOf('/')
    const root = slash < 0 ? undefined : roots.get(shown.slice(0, slash))
    const parts = shown.slice(slash + 1).split('/').filter(p => p !== '')
    // A name no index row can hold (`.`, `..`) looks nowhere: the lookups stay under the root.
    if (root === undefined || parts.length === 0 || parts.some(p => p === '.' || p === '..')) continue
    const through = await inTheWay(root, parts.slice(0, -1)) === undefined
    // A missing directory on the way passes it, and the lstat below finds nothing. Of the kind deleted: a directory now where a file was deleted is another path's.
    const dir = shown.endsWith('/')
    if (ignored.get(shown.slice(0, slash))?.(parts.join('/')) === true) continue
    if (through && await lstat(join(root, ...parts)).then(s => dir ? s.isDirectory() : s.isFile() || s.isSymbolicLink(), () => false)) there.push(shown)
  }
  return there.sort()
}

/**
 * Where a folder's directory under `--to` really is: `to`'s real path and the folder's name, never
 * what a link there leads to. Undefined when it is not there; refused, before anything is removed,
 * when it is a symlink or no directory.
 */
async function rootUnder (to: string, name: string): Promise<string | undefined> {
  const realTo = await realpath(to).catch(() => undefined)
  if (realTo === undefined) return undefined
  const root = join(realTo, name)
  const stats = await lstat(root).catch(() => undefined)
  if (stats === undefined) return undefined
  if (stats.isDirectory()) return root
  throw new TargetPathError(`${join(to, name)} is ${stats.isSymbolicLink() ? 'a symlink' : 'not a directory'}: --delete removes nothing through it, and nothing was removed; move it aside, or bring the files back elsewhere (--to ANOTHER_DIR)`)
}
