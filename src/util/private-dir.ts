import { chmodSync, mkdirSync, statSync } from 'node:fs'

/**
 * Makes `dir` (and any missing parent) and keeps it to its owner: 0700. An existing directory open
 * to others is tightened; answers its old mode then, so the caller can say so.
 */
export function ensurePrivateDir (dir: string): number | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const mode = statSync(dir).mode & 0o777
  if (mode === 0o700) return undefined
  chmodSync(dir, 0o700)
  return mode
}
