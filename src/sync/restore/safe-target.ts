import { lstat, mkdir, realpath } from 'node:fs/promises'
import { join } from 'node:path'
import { ContentIntegrityError, TargetPathError } from '../../errors.js'
import { inCheckedDir } from '../../util/fd-path.js'

/**
 * The components of a `folder/path` that came from an index row (possibly another device's, or
 * a forged segment's), or a refusal: nothing empty, `.`, `..`, absolute or holding a NUL may
 * become part of a path on this disk.
 */
export function safeComponents (relative: string): string[] {
  const parts = relative.split('/')
  if (relative.startsWith('/') || parts.some(p => p === '' || p === '.' || p === '..' || p.includes('\0'))) {
    throw new ContentIntegrityError(`the index names ${JSON.stringify(relative.slice(0, 200))} as a file: not a path inside a folder, refused (a damaged or forged row)`)
  }
  return parts
}

/**
 * Makes the directories from `root` down to a file's parent, one component at a time, refusing
 * any that exists as something other than a real directory (a symlink planted on the way would
 * send the write elsewhere). Answers the file's path under `root`, where its directory really
 * is now (for the writer to check it still is when the file is renamed into place), and whether
 * this call made that directory (so it held nothing before).
 */
export async function prepareTarget (root: string, components: readonly string[], dirMode: (parts: readonly string[]) => number = () => 0o755): Promise<{ target: string, targetDir: string, made: boolean }> {
  // Where the directory must really be: the root's real path and the components checked below,
  // each a real directory. Never the directory's own real path looked up at the end, which
  // follows a component swapped for a symlink after it was checked.
  const realRoot = await realpath(root)
  let dir = root
  let made = false
  const parts = components.slice(0, -1)
  for (let i = 0; i < parts.length; i++) {
    const name = parts[i] as string
    const parent = dir
    dir = join(dir, name)
    // Looked at and made through the parent's descriptor, checked to be where the walk put it:
    // a component swapped for a symlink meanwhile makes nothing anywhere else.
    made = await inCheckedDir(parent, join(realRoot, ...parts.slice(0, i)), (now) => new TargetPathError(`${parent} is not where it was checked (it leads to ${now}): a symlink put in its way? Nothing is written through it`), async (at) => {
      const stats = await lstat(at(name)).catch((err: NodeJS.ErrnoException) => { if (err.code === 'ENOENT') return undefined; throw err })
      let madeHere = false
      // Made no wider than recorded (its owner may write into it meanwhile); its own mode comes once its entries are in.
      if (stats === undefined) madeHere = await mkdir(at(name), { mode: dirMode(parts.slice(0, i + 1)) }).then(() => true, (err: NodeJS.ErrnoException) => { if (err.code !== 'EEXIST') throw err; return false })
      else if (!stats.isDirectory()) throw new TargetPathError(`${dir} is ${stats.isSymbolicLink() ? 'a symlink' : 'not a directory'}: nothing is written through it; move it aside, or bring the files back elsewhere (--to ANOTHER_DIR)`)
      // Made or found, it must be a real directory now (a symlink swapped in after mkdir is caught here).
      if (!(await lstat(at(name))).isDirectory()) throw new TargetPathError(`${dir} is not a real directory: nothing is written through it; move it aside, or bring the files back elsewhere (--to ANOTHER_DIR)`)
      return madeHere
    })
  }
  const expected = join(realRoot, ...components.slice(0, -1))
  const now = await realpath(dir)
  if (now !== expected) throw new TargetPathError(`${dir} is not where it was checked (it leads to ${now}): a symlink put in its way? Nothing is written through it`)
  return { target: join(root, ...components), targetDir: expected, made }
}
