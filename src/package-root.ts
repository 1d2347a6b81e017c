import { existsSync, readFileSync } from 'node:fs'
import { InstallDamagedError } from './errors.js'

/** What cidsync reads of its own package.json. */
export interface PackageManifest {
  readonly name: string
  readonly version: string
  /** Command name → the script that runs it, relative to {@link PACKAGE_ROOT}. */
  readonly bin: Readonly<Record<string, string>>
}

/** Levels looked up from this module: src/, dist/ and dist/bin/ are one or two below the root. */
const MAX_LEVELS = 4

/**
 * The package's root is found by looking up for cidsync's package.json, not by a fixed `../`: this
 * module runs from src/ (the tests), from tsc's dist/ and from the bundle in dist/bin/, each at
 * another depth below it.
 */
function findRoot (): { root: URL, manifest: PackageManifest } {
  let dir = new URL('./', import.meta.url)
  for (let level = 0; level <= MAX_LEVELS; level++) {
    const path = new URL('package.json', dir)
    if (existsSync(path)) {
      const manifest = JSON.parse(readFileSync(path, 'utf8')) as PackageManifest
      if (manifest.name === 'cidsync') return { root: dir, manifest }
    }
    dir = new URL('../', dir)
  }
  throw new InstallDamagedError(`cidsync's package.json is not above ${import.meta.url}: the install is damaged; install cidsync again`)
}

const found = findRoot()

/** The root of this install, as a directory URL (ends in `/`). */
export const PACKAGE_ROOT: URL = found.root

/** This install's package.json. */
export const PACKAGE_MANIFEST: PackageManifest = found.manifest

/** The script `cidsync` runs: what a service unit starts. */
export const CLI_SCRIPT: URL = new URL(found.manifest.bin.cidsync ?? 'dist/bin/cidsync.js', found.root)
