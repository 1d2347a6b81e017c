import { lstat } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * Why a restore could not go through the directories from `root` down `parts` (one that is a file
 * or a symlink: it writes through none), or undefined. Each directory is looked at once.
 */
export function wayChecker (): (root: string, parts: readonly string[]) => Promise<string | undefined> {
  const seen = new Map<string, { readonly missing: boolean, readonly blocked?: string }>()
  return async (root, parts) => {
    for (let i = 1; i <= parts.length; i++) {
      const dir = join(root, ...parts.slice(0, i))
      let state = seen.get(dir)
      if (state === undefined) {
        const stats = await lstat(dir).catch(() => undefined)
        state = stats === undefined
          ? { missing: true }
          : { missing: false, blocked: stats.isDirectory() ? undefined : `${dir} is ${stats.isSymbolicLink() ? 'a symlink' : 'not a directory'}: nothing is written through it` }
        seen.set(dir, state)
      }
      if (state.blocked !== undefined) return state.blocked
      // A directory missing is made on the way: nothing below it is there yet.
      if (state.missing) return undefined
    }
    return undefined
  }
}
