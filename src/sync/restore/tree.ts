import { constants, type BigIntStats } from 'node:fs'
import { link, lchown, lstat, lutimes, open, readlink, realpath, rm, symlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { fetchTempFor, renameInto, utimesTime, type FileAttrs } from '../../custody/index.js'
import { TargetPathError } from '../../errors.js'
import { fdPath, inCheckedDir } from '../../util/fd-path.js'

const moved = (dir: string, expectedDir: string) => (now: string): TargetPathError =>
  new TargetPathError(`${dir} changed while an entry was put into it (now at ${now}, not ${expectedDir}): a symlink put in its way? Nothing was written through it`)

/**
 * Makes a symlink as recorded: made under a temp name beside its target, never followed, its
 * owner (as root) and mtime set on the link itself, then renamed into place; without `replace`
 * never over a file there. Every step goes through the directory's checked descriptor.
 */
export async function placeSymlink (linkTarget: string, target: string, expectedDir: string, replace: boolean, attrs: FileAttrs, mtimeMs: number): Promise<void> {
  const dir = dirname(target)
  const temp = basename(fetchTempFor(target))
  await inCheckedDir(dir, expectedDir, moved(dir, expectedDir), async (at) => {
    await symlink(linkTarget, at(temp))
    try {
      if (attrs.uid !== undefined || attrs.gid !== undefined) await lchown(at(temp), attrs.uid ?? -1, attrs.gid ?? -1)
      await lutimes(at(temp), Date.now() / 1000, utimesTime(mtimeMs))
      renameInto(at(temp), at(basename(target)), replace, target)
    } catch (err) {
      await rm(at(temp), { force: true })
      throw err
    }
  })
}

/** Whether a symlink already there says what the row records. */
export async function sameSymlink (target: string, linkTarget: string): Promise<boolean> {
  return await readlink(target).then(t => t === linkTarget, () => false)
}

/**
 * The inode of a file restored at `path`, whose directory really is `expectedDir`: read on a
 * descriptor opened without following a link, whose file the kernel names, so a directory
 * swapped on the way cannot hand over another file.
 */
export async function inodeIn (path: string, expectedDir: string): Promise<{ ino: number, dev: number }> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW)
  try {
    const where = fdPath(handle.fd)
    if (where !== undefined && where !== join(expectedDir, basename(path))) throw new TargetPathError(`${path} is not the file restored (it is ${where}): a symlink put in its way? No link was made to it`)
    const stats = await handle.stat()
    if (!stats.isFile()) throw new TargetPathError(`${path} is not a regular file: no link was made to it`)
    return { ino: stats.ino, dev: stats.dev }
  } finally {
    await handle.close()
  }
}

/**
 * Gives another name to a file already restored (a hard link, as recorded): linked under a temp
 * name in the directory's checked descriptor, checked to be that file (`first`, its inode),
 * renamed; without `replace` never over a file there.
 */
export async function placeHardLink (existing: string, first: { ino: number, dev: number }, target: string, expectedDir: string, replace: boolean): Promise<void> {
  const dir = dirname(target)
  const temp = basename(fetchTempFor(target))
  await inCheckedDir(dir, expectedDir, moved(dir, expectedDir), async (at) => {
    await link(existing, at(temp))
    try {
      const made = await lstat(at(temp))
      if (made.ino !== first.ino || made.dev !== first.dev) throw new TargetPathError(`${dirname(existing)} changed while a hard link was made to ${existing}: a symlink put in its way? The link was removed`)
      renameInto(at(temp), at(basename(target)), replace, target)
    } catch (err) {
      await rm(at(temp), { force: true })
      throw err
    }
  })
}

/** An mtime set by `utimes` reads back within a microsecond of the one recorded (rounded either way). */
const MTIME_SLACK_MS = 0.002

/** Whether a file there has the mtime its row records. */
export function sameMtime (there: { mtimeMs: number }, mtimeMs: number): boolean {
  return Math.abs(there.mtimeMs - mtimeMs) <= MTIME_SLACK_MS
}

/**
 * A symlink whose target is right (the caller read it) and left as it is: its recorded mtime, and
 * its owner where one is restored (as root). Else it is made anew. A restore and its dry run ask alike.
 */
export function symlinkInPlace (there: { mtimeMs: number, uid: number, gid: number }, mtimeMs: number, attrs: FileAttrs): boolean {
  return sameMtime(there, mtimeMs) && (attrs.uid === undefined || attrs.uid === there.uid) && (attrs.gid === undefined || attrs.gid === there.gid)
}

/**
 * Gives a file whose bytes are already right its recorded owner, mode and mtime, with nothing
 * fetched: on a descriptor opened without following a link, once the kernel says it is the file
 * checked (inode `ino`) in the directory checked (`expectedDir`). A mode not recorded
 * (`modeUnknown`) is left as it is.
 */
export async function fixFileAttrs (path: string, expectedDir: string, ino: number, attrs: FileAttrs, mtimeMs: number, modeUnknown: boolean): Promise<void> {
  // O_NONBLOCK: a FIFO swapped in since the hash must not block the open until a writer comes.
  const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const where = fdPath(handle.fd)
    if (where !== undefined && where !== join(expectedDir, basename(path))) throw new TargetPathError(`${path} is not the file checked (it is ${where}): a symlink put in its way? It was left as it is`)
    const stats = await handle.stat()
    if (!stats.isFile() || stats.ino !== ino) throw new TargetPathError(`${path} changed while it was checked: it was left as it is`)
    if (!modeUnknown) {
      // The owner first: a chown clears setuid bits.
      if (attrs.uid !== undefined || attrs.gid !== undefined) await handle.chown(attrs.uid ?? -1, attrs.gid ?? -1)
      await handle.chmod(attrs.mode & 0o7777)
    }
    await handle.utimes(Date.now() / 1000, utimesTime(mtimeMs))
  } finally {
    await handle.close()
  }
}

/**
 * Gives a directory its recorded mode, owner and mtime through a descriptor opened without
 * following a link, once the kernel says it is the directory checked (`expected`, a real path).
 * Called after everything under it is in place: its mtime would move otherwise, and a directory
 * recorded without write permission could take no files. Answers whether it changed anything.
 */
export async function finishDirectory (path: string, expected: string, attrs: FileAttrs, mtimeMs: number): Promise<boolean> {
  const handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
  try {
    const where = fdPath(handle.fd) ?? await realpath(path)
    if (where !== expected) throw new TargetPathError(`${path} is not the directory restored into (now ${where}): a symlink put in its way? It was left as it is`)
    // Already as recorded: left alone, so a second run says so instead of "written".
    if (directoryAsRecorded(await handle.stat({ bigint: true }), attrs, mtimeMs)) return false
    if (attrs.uid !== undefined || attrs.gid !== undefined) await handle.chown(attrs.uid ?? -1, attrs.gid ?? -1)
    await handle.chmod(attrs.mode & 0o7777)
    await handle.utimes(Date.now() / 1000, utimesTime(mtimeMs))
    return true
  } finally {
    await handle.close()
  }
}

/**
 * Whether a directory already has the owner, mode and mtime it records. The mtime is a double of
 * milliseconds, and `utimes` sets it to a microsecond of it, rounded either way: 1 µs apart is the same.
 */
function directoryAsRecorded (there: BigIntStats, attrs: FileAttrs, mtimeMs: number): boolean {
  if (mtimeMs < 0) return false
  if ((there.mode & 0o7777n) !== BigInt(attrs.mode & 0o7777)) return false
  if (attrs.uid !== undefined && there.uid !== BigInt(attrs.uid)) return false
  if (attrs.gid !== undefined && there.gid !== BigInt(attrs.gid)) return false
  const apart = there.mtimeNs / 1000n - BigInt(Math.round(mtimeMs * 1000))
  return apart >= -1n && apart <= 1n
}

/** A directory's depth: the deepest are finished first. */
export const depthOf = (path: string): number => path.split('/').length
