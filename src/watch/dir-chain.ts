import { statSync, type Stats } from 'node:fs'
import { join } from 'node:path'

/** A directory's identity: (device, inode), the same whatever path or link reaches it. */
export const dirId = (stats: Pick<Stats, 'dev' | 'ino'>): string => `${stats.dev}:${stats.ino}`

/**
 * The identities of the folder's root and of every directory from it down to `relDir`
 * (inclusive), as a followed link reaches them. A link to a directory in this chain is a loop
 * (a link to an ancestor): following it would walk the same tree again and again.
 */
export function chainIds (root: string, relDir: string): string[] {
  const ids: string[] = []
  const parts = relDir === '' ? [] : relDir.split('/')
  for (let depth = 0; depth <= parts.length; depth++) {
    try {
      ids.push(dirId(statSync(join(root, ...parts.slice(0, depth)))))
    } catch {
      // A directory gone meanwhile: the walk below it finds nothing either.
    }
  }
  return ids
}
