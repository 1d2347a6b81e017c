import { opendir, lstat, stat } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { join } from 'node:path'
import type { IgnoreMatcher } from './ignore.js'

export interface WalkedFile { readonly relativePath: string, readonly stats: Stats }

export interface WalkOptions {
  readonly ignore: IgnoreMatcher
  readonly followSymlinks: boolean
  readonly recursive: boolean
  readonly signal?: AbortSignal
  /** A directory or file that exists but could not be read (not one that vanished meanwhile). */
  readonly onUnreadable?: (relativePath: string, code: string, kind: 'file' | 'dir') => void
}

const vanished = (err: unknown): boolean => ['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')
const codeOf = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? 'EIO'

/**
 * The regular files under `root/relativeDir`, stats included; ignored trees are never entered and
 * symlinks are skipped unless followed. For rescans of one folder (a folder moved in); the startup
 * scan rides on chokidar's own pass.
 */
export async function * walkFiles (root: string, relativeDir: string, options: WalkOptions): AsyncGenerator<WalkedFile> {
  const pending = [relativeDir]
  const visited = new Set<string>()
  while (pending.length > 0) {
    if (options.signal?.aborted === true) return
    const dirRel = pending.pop() as string
    let dir
    try {
      dir = await opendir(join(root, dirRel), { bufferSize: 256 })
    } catch (err) {
      if (!vanished(err)) options.onUnreadable?.(dirRel, codeOf(err), 'dir')
      continue
    }
    for await (const entry of dir) {
      const rel = dirRel === '' ? entry.name : `${dirRel}/${entry.name}`
      if (options.ignore.itself(rel)) continue
      let stats: Stats
      try {
        stats = entry.isSymbolicLink() && options.followSymlinks ? await stat(join(root, rel)) : await lstat(join(root, rel))
      } catch (err) {
        if (!vanished(err)) options.onUnreadable?.(rel, codeOf(err), 'file')
        continue
      }
      if (stats.isFile()) yield { relativePath: rel, stats }
      else if (stats.isDirectory() && options.recursive && (!entry.isSymbolicLink() || !visited.has(`${stats.dev}:${stats.ino}`))) {
        visited.add(`${stats.dev}:${stats.ino}`)
        pending.push(rel)
      }
    }
  }
}
