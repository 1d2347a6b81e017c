import { fstatSync } from 'node:fs'
import { UsageError } from '../errors.js'

/**
 * Refuses to write a secret to stdout when stdout is a regular file others may read, or one of
 * another user. `cidsync ... > file` makes the file with the shell's umask (0644) before cidsync
 * runs: a reader who opened it in that moment keeps reading, whatever mode comes after. So such a
 * file is refused, nothing written, and `--out` (made 0600 as it is created) named instead. A
 * pipe or a terminal is left alone.
 */
export function refuseOpenRedirect (secret: string, out: string, fd = 1): void {
  const stats = fstatSync(fd)
  if (!stats.isFile()) return
  const mine = process.getuid === undefined || stats.uid === process.getuid()
  if (mine && (stats.mode & 0o077) === 0) return
  const why = mine ? `others may read (mode ${(stats.mode & 0o777).toString(8)})` : 'of another user'
  throw new UsageError(`standard output is a file ${why}, made before cidsync ran: ${secret} was not written. ` +
    `Use ${out} FILE (made 0600 as it is created), or run under umask 077`)
}
