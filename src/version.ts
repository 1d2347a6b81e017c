import { packageVersion } from './package-root.js'

/** This build's version, from package.json (read at the first call: see package-root.ts). */
export function cidsyncVersion (): string {
  return packageVersion()
}
