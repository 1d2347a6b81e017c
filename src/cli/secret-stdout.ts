import { fchmodSync, fstatSync } from 'node:fs'

/**
 * `cidsync ... > file` makes the file with the shell's umask (0644), which every reader of a
 * secret refuses and other users may read: stdout that is a regular file open to others is made
 * 0600 (through the descriptor, so no path can be swapped) before the secret is written. A pipe,
 * a terminal or a file of another owner is left alone. Answers the mode it had, when changed.
 */
export function tightenRedirect (fd = 1): number | undefined {
  try {
    const stats = fstatSync(fd)
    if (!stats.isFile() || (stats.mode & 0o077) === 0) return undefined
    fchmodSync(fd, 0o600)
    return stats.mode & 0o777
  } catch {
    // Not ours to change (another owner): the reader says what to do.
    return undefined
  }
}
