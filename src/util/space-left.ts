import { statfsSync } from 'node:fs'

/**
 * Bytes this process may still write on the file system holding `dir` (root may use the blocks
 * reserved for it); undefined when the system cannot tell.
 */
export function spaceLeft (dir: string): number | undefined {
  try {
    const fs = statfsSync(dir)
    return (process.getuid?.() === 0 ? fs.bfree : fs.bavail) * fs.bsize
  } catch {
    return undefined
  }
}
