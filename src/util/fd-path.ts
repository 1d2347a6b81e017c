import { lstatSync, readlinkSync, realpathSync } from 'node:fs'
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
