import { openSync, writeSync, fsyncSync, closeSync, renameSync, unlinkSync } from 'node:fs'
import { makeDirsSync } from './make-dirs.js'
import { dirname, basename, join } from 'node:path'
import { randomBytes } from 'node:crypto'

export interface AtomicWriteOptions {
  /** File mode of the new file; 0o600 for anything secret. */
  readonly mode?: number
}

function fsyncDirectory (dir: string): void {
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Replaces `path` so that a crash leaves either the old file or the new one, never a torn one:
 * write a temp file beside it, fsync it, rename it over, fsync the directory.
 */
export function writeFileAtomicSync (path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  const dir = dirname(path)
  makeDirsSync(dir)
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`)
  const fd = openSync(temp, 'wx', options.mode ?? 0o644)
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data
    let written = 0
    while (written < bytes.byteLength) written += writeSync(fd, bytes, written)
    fsyncSync(fd)
  } catch (err) {
    closeSync(fd)
    unlinkSync(temp)
    throw err
  }
  closeSync(fd)
  renameSync(temp, path)
  fsyncDirectory(dir)
}
