import { readFileSync } from 'node:fs'
import { InstallDamagedError } from './errors.js'

/** What cidsync reads of its own package.json. */
export interface PackageManifest {
  readonly version: string
  /** The script `cidsync` runs, relative to the package's root. */
  readonly cli: string
}

interface Found { readonly root: URL, readonly manifest: PackageManifest }

let found: Found | undefined

/**
 * The package's root, from where this module runs: src/ and tsc's dist/ are one level below it,
 * the bundle's dist/bin/ two. Only those: looking further up could take a package.json someone
 * else planted above a damaged install (it names the script a service unit runs as root).
 */
function rootOf (moduleUrl: string): URL {
  const dir = new URL('./', moduleUrl)
  const parts = dir.pathname.split('/').filter(p => p !== '')
  const bundled = parts.at(-1) === 'bin' && parts.at(-2) === 'dist'
  return new URL(bundled ? '../../' : '../', dir)
}

function find (): Found {
  const root = rootOf(import.meta.url)
  const path = new URL('package.json', root)
  const damaged = (why: string): InstallDamagedError =>
    new InstallDamagedError(`cidsync's install at ${decodeURIComponent(root.pathname)} is damaged: ${why}; install cidsync again`)
  let raw: { name?: unknown, version?: unknown, bin?: unknown }
  try {
    raw = JSON.parse(readFileSync(path, 'utf8')) as typeof raw
  } catch (err) {
    throw damaged((err as NodeJS.ErrnoException).code === 'ENOENT' ? 'its package.json is missing' : `its package.json cannot be read (${(err as Error).message})`)
  }
  const cli = typeof raw.bin === 'object' && raw.bin !== null ? (raw.bin as Record<string, unknown>).cidsync : undefined
  if (raw.name !== 'cidsync' || typeof raw.version !== 'string') throw damaged('its package.json is not cidsync\'s')
  // The script stays inside the package: a unit must never be pointed elsewhere by it.
  if (typeof cli !== 'string' || cli.startsWith('/') || cli.split(/[\\/]/).includes('..')) throw damaged('its package.json names no script of its own for `cidsync`')
  return { root, manifest: { version: raw.version, cli } }
}

/**
 * Read at first use, not at load: a damaged install is then reported as the coded
 * {@link InstallDamagedError} by whatever command asked, not a crash while modules load.
 */
function installed (): Found {
  found ??= find()
  return found
}

/** The root of this install, as a directory URL (ends in `/`). */
export function packageRoot (): URL {
  return installed().root
}

/** This install's version, from its package.json. */
export function packageVersion (): string {
  return installed().manifest.version
}

/** The script `cidsync` runs: what a service unit starts. */
export function cliScript (): URL {
  const { root, manifest } = installed()
  return new URL(manifest.cli, root)
}
