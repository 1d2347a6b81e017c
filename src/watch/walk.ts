import { opendir, lstat, stat } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { join } from 'node:path'
import type { IgnoreMatcher } from './ignore.js'
import { chainIds, dirId } from './dir-chain.js'
import { printableName, utf8Name } from './file-name.js'

export interface WalkedFile { readonly relativePath: string, readonly stats: Stats }

export interface WalkOptions {
  readonly ignore: IgnoreMatcher
  readonly followSymlinks: boolean
  readonly recursive: boolean
  readonly signal?: AbortSignal
  /** A directory found and not entered (a walk that is not recursive). */
  readonly onDir?: (relativePath: string) => void
  /** An entry whose name is not UTF-8, in a lossless printable form: it cannot be indexed. */
  readonly onBadName?: (printablePath: string) => void
  /** A directory or file that exists but could not be read (not one that vanished meanwhile). */
  readonly onUnreadable?: (relativePath: string, code: string, kind: 'file' | 'dir') => void
  /** A symbolic link left alone (`followSymlinks` false): listed as skipped, not dropped unsaid. */
  readonly onSymlink?: (relativePath: string) => void
}

const vanished = (err: unknown): boolean => ['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')
const codeOf = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? 'EIO'

/** At most this many directories deep, so a tree that keeps growing under a walk still ends. */
const MAX_DEPTH = 256

/**
 * The regular files under `root/relativeDir`, stats included; ignored trees are never entered and
 * symlinks are skipped unless followed. A followed link to a directory above it (a loop) is not
 * entered: directories are told apart by (device, inode). For rescans of one folder (a folder
 * moved in or made); the startup scan has its own thread.
 */
export async function * walkFiles (root: string, relativeDir: string, options: WalkOptions): AsyncGenerator<WalkedFile> {
  const pending = [{ rel: relativeDir, chain: options.followSymlinks ? chainIds(root, relativeDir) : [] }]
  while (pending.length > 0) {
    if (options.signal?.aborted === true) return
    const { rel: dirRel, chain } = pending.pop() as { rel: string, chain: string[] }
    let dir
    try {
      dir = await opendir(join(root, dirRel), { bufferSize: 256, encoding: 'buffer' as BufferEncoding })
    } catch (err) {
      if (!vanished(err)) options.onUnreadable?.(dirRel, codeOf(err), 'dir')
      continue
    }
    for await (const entry of dir) {
      const raw = entry.name as unknown as Buffer
      const name = utf8Name(raw)
      if (name === undefined) {
        options.onBadName?.(dirRel === '' ? printableName(raw) : `${dirRel}/${printableName(raw)}`)
        continue
      }
      const rel = dirRel === '' ? name : `${dirRel}/${name}`
      if (options.ignore.itself(rel)) continue
      if (entry.isSymbolicLink() && !options.followSymlinks) {
        options.onSymlink?.(rel)
        continue
      }
      let stats: Stats
      try {
        stats = entry.isSymbolicLink() && options.followSymlinks ? await stat(join(root, rel)) : await lstat(join(root, rel))
      } catch (err) {
        if (!vanished(err)) options.onUnreadable?.(rel, codeOf(err), 'file')
        continue
      }
      if (stats.isFile()) yield { relativePath: rel, stats }
      else if (stats.isDirectory() && !chain.includes(dirId(stats))) {
        if (!options.recursive) options.onDir?.(rel)
        else if (chain.length < MAX_DEPTH) pending.push({ rel, chain: options.followSymlinks ? [...chain, dirId(stats)] : chain })
      }
    }
  }
}
