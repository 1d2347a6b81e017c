import { readFileSync } from 'node:fs'
import { OpenFilesLimitError } from '../errors.js'

/**
 * Files a command may need open at once. The embedded service keeps up to 256 packs open for
 * reads. A restore holds a few batches of verified files open until their fsync (`HELD_BATCHES`),
 * and the files its sealing threads are writing. The databases, threads and pipes come beside
 * them. Below this, a restore failed most small files with EMFILE. Node raises the soft limit to
 * the hard one at start, so only a hard limit this low is met (`ulimit -n 256` in a shell).
 */
export const MIN_OPEN_FILES = 1024

/** The soft limit on open files from `/proc/self/limits`; undefined where there is none (macOS) or it is unlimited. */
export function openFilesLimit (limits = '/proc/self/limits'): number | undefined {
  let text: string
  try {
    text = readFileSync(limits, 'utf8')
  } catch {
    return undefined
  }
  const soft = /^Max open files\s+(\d+)\s/m.exec(text)?.[1]
  return soft === undefined ? undefined : Number(soft)
}

/**
 * Refuses to start under a limit too low to finish: below it a command failed midway, each file
 * with EMFILE, or with a message that named another cause (a database it could not open).
 */
export function checkOpenFilesLimit (limit = openFilesLimit()): void {
  if (limit === undefined || limit >= MIN_OPEN_FILES) return
  throw new OpenFilesLimitError(`this process may open only ${limit} files at once (ulimit -n), and cidsync needs at least ${MIN_OPEN_FILES}: ` +
    'raise it (`ulimit -n 4096` in the shell, up to the hard limit `ulimit -Hn`; root raises that in /etc/security/limits.conf; `LimitNOFILE=4096` in a systemd unit)')
}
