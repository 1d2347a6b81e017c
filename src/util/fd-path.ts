import { closeSync, constants, lstatSync, openSync, readlinkSync, realpathSync } from 'node:fs'
import { open, realpath } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'

/** Whether this system names an open descriptor's file by `/proc/self/fd` (Linux): checked once. */
let procFd: boolean | undefined

/**
 * Where the file open on `fd` really is, as the kernel names it, or undefined where the system does
 * not say (no `/proc`). Unlike a path looked up again, no symlink swapped in since can change it.
 */
export function fdPath (fd: number): string | undefined {
  if (procFd === false) return undefined
  try {
    const path = readlinkSync(`/proc/self/fd/${fd}`)
    procFd = true
    return path
  } catch {
    procFd ??= false
    return undefined
  }
}

/**
 * Whether the file open on `fd` lies in `dir` (a real path) under `path`'s name: as the kernel
 * names the descriptor's file where it can; else by the directory's real path and the name's
 * inode, looked up again (a narrower check, for systems without `/proc`).
 */
export function openedIn (fd: number, path: string, dir: string, inode: number): boolean {
  const where = fdPath(fd)
  if (where !== undefined) return where === join(dir, basename(path))
  try {
    return realpathSync(dirname(path)) === dir && lstatSync(path).ino === inode
  } catch {
    return false
  }
}

/**
 * Runs `fn` inside the directory at `dir`, which must really be `expected` (a real path): opened
 * once and checked by the kernel's name for it, then every name is reached through that
 * descriptor (`/proc/self/fd/N/NAME`), so a component swapped for a symlink after the check
 * changes nothing. Where the system gives no such names, `dir`'s real path is checked instead and
 * names are joined to `dir` (a narrower check). Throws `refused()` when the directory is elsewhere.
 */
export async function inCheckedDir<T> (dir: string, expected: string, refused: (now: string) => Error, fn: (at: (name: string) => string) => Promise<T>): Promise<T> {
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY)
  try {
    const named = fdPath(handle.fd)
    return await fn(namesIn(handle.fd, named, named ?? await realpath(dir), dir, expected, refused))
  } finally {
    await handle.close()
  }
}

/**
 * {@link inCheckedDir} with synchronous calls: for a batch of names in one directory, where each
 * call costs less than its trip to libuv's threads and back.
 */
export function inCheckedDirSync<T> (dir: string, expected: string, refused: (now: string) => Error, fn: (at: (name: string) => string) => T): T {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY)
  try {
    const named = fdPath(fd)
    return fn(namesIn(fd, named, named ?? realpathSync(dir), dir, expected, refused))
  } finally {
    closeSync(fd)
  }
}

/** Names reached through directory descriptor `fd`, once `now` (where it is) is `expected`. */
function namesIn (fd: number, named: string | undefined, now: string, dir: string, expected: string, refused: (now: string) => Error): (name: string) => string {
  if (now !== expected) throw refused(now)
  const base = named === undefined ? dir : `/proc/self/fd/${fd}`
  return name => `${base}/${name}`
}
