import { chmodSync, statSync } from 'node:fs'
import { makeDirsSync } from './make-dirs.js'

/**
 * Makes `dir` (and any missing parent) and keeps it to its owner: 0700. An existing directory open
 * to others is tightened; answers its old mode then, so the caller can say so.
 */
export function ensurePrivateDir (dir: string): number | undefined {
  makeDirsSync(dir, 0o700)
  const mode = statSync(dir).mode & 0o777
  if (mode === 0o700) return undefined
  chmodSync(dir, 0o700)
  return mode
}
