import type { Config, MirrorConfig } from '../config/index.js'
import { ConfigError } from '../errors.js'
import type { CreateStore } from './directory-store.js'
import type { ObjectHome } from './pointer-registry.js'

/**
 * How a `[[mirrors]]` table names a backend's home: by `path` (a folder on this machine), or by
 * `url` with one of its URL schemes. A backend with neither is the primary's only.
 */
export type BackendLocation = { readonly path: true } | { readonly schemes: readonly string[] }

/** Where one home is, as a backend opens it: a configured mirror, or a path given on the command line. */
export interface HomeTarget {
  readonly config?: Config
  /** The mirror's table; a path read alone (`restore --from PATH`) has a name of ''. */
  readonly mirror: MirrorConfig
  /** Make the store where none is (`login --mirror` does); never otherwise. */
  readonly create?: CreateStore
}

/** A home opened: nothing is read or sent until it is used. */
export interface OpenedHome {
  readonly home: ObjectHome
  /** Fails once, up front, when the home is not there: a read then fails once, not file by file. */
  readonly ready: () => Promise<void>
  readonly close: () => Promise<void>
}

/**
 * One kind of home for objects and a pointer: the service over HTTP, the embedded service, a
 * plain directory. Each registers once (connect/backends.ts); every place that opens a home,
 * names one or reads its failures asks the registry, never the kind itself.
 */
export interface Backend {
  readonly kind: string
  /** What it is, in a message: "directory" in "mirror usb is a directory". */
  readonly noun: string
  /** How a `[[mirrors]]` table names it; undefined for the primary only. */
  readonly location?: BackendLocation
  /** What it keeps beside objects and a pointer: names and deals make a `ServiceHome`. */
  readonly offers: { readonly names: boolean, readonly deals: boolean }
  /** Whether `err` says the home itself is missing or unreachable: another home may do better. */
  readonly failed: (err: unknown) => boolean
  /** What to do about such a failure, for mirror `name`; undefined for a failure not its own. */
  readonly advice: (err: unknown, name: string) => string | undefined
  /** Opens a home a `[[mirrors]]` table (or a path) names. */
  readonly open?: (target: HomeTarget) => OpenedHome
  /**
   * Makes the home ready for a first copy, where there is nothing to sign in to: a directory
   * makes its store. Answers the places others may write to. Undefined: `login --mirror` signs in.
   */
  readonly prepare?: (mirror: MirrorConfig, create: CreateStore) => Promise<{ readonly openToOthers: readonly string[] }>
}

const registered = new Map<string, Backend>()

/** Adds a backend. A kind, a scheme or the path registered twice is a mistake in the code. */
export function registerBackend (backend: Backend): void {
  if (registered.has(backend.kind)) throw new ConfigError(`a backend of kind ${backend.kind} is registered already`)
  for (const other of registered.values()) {
    if (backend.location === undefined || other.location === undefined) continue
    if ('path' in backend.location && 'path' in other.location) throw new ConfigError(`backends ${other.kind} and ${backend.kind} both read a path`)
    if ('schemes' in backend.location && 'schemes' in other.location) {
      const shared = backend.location.schemes.find(s => (other.location as { schemes: readonly string[] }).schemes.includes(s))
      if (shared !== undefined) throw new ConfigError(`backends ${other.kind} and ${backend.kind} both read ${shared}: URLs`)
    }
  }
  registered.set(backend.kind, backend)
}

/** Removes a backend (a test's own, once it ends). */
export function unregisterBackend (kind: string): void {
  registered.delete(kind)
}

/** Every backend registered, in the order of registration. */
export function backends (): Backend[] {
  return [...registered.values()]
}

/** The backend of `kind`, or undefined. */
export function backendOfKind (kind: string): Backend | undefined {
  return registered.get(kind)
}

/** The URL or path a mirror's table names, as written there: for messages. */
export function mirrorLocation (mirror: MirrorConfig): string {
  return mirror.path !== '' ? mirror.path : mirror.url ?? mirror.uploadUrl
}

/** The backend that reads a path, or a usage error when none is registered. */
export function pathBackend (): Backend & { readonly open: NonNullable<Backend['open']> } {
  const found = backends().find(b => b.location !== undefined && 'path' in b.location)
  if (found?.open === undefined) throw new ConfigError('no backend reads a path')
  return found as Backend & { readonly open: NonNullable<Backend['open']> }
}

/** The backend a `[[mirrors]]` table names, by its path or its URL's scheme. */
export function mirrorBackend (mirror: MirrorConfig): Backend & { readonly open: NonNullable<Backend['open']> } {
  if (mirror.path !== '') return pathBackend()
  const url = mirror.url ?? mirror.uploadUrl
  let scheme = ''
  try { scheme = new URL(url).protocol.replace(/:$/, '').toLowerCase() } catch { /* none: named below */ }
  const found = backends().find(b => b.location !== undefined && 'schemes' in b.location && b.location.schemes.includes(scheme))
  if (found?.open !== undefined) return found as Backend & { readonly open: NonNullable<Backend['open']> }
  const schemes = backends().flatMap(b => b.location !== undefined && 'schemes' in b.location ? b.location.schemes.map(s => `${s}:`) : [])
  throw new ConfigError(`mirror ${mirror.name}: no backend reads ${JSON.stringify(url)}: a [[mirrors]] table names a path, or a URL of scheme ${schemes.join(', ')}`)
}

/** Whether `err` is a home's own failure (missing or unreachable), as some backend says. */
export function homeFailed (err: unknown): boolean {
  return backends().some(b => b.failed(err))
}

/** What to do about a mirror's own failure, as its backend says; undefined when none claims it. */
export function homeAdvice (err: unknown, name: string): string | undefined {
  for (const backend of backends()) {
    const advice = backend.advice(err, name)
    if (advice !== undefined) return advice
  }
  return undefined
}

/** A `[[mirrors]]`-like table for a path read alone (`restore --from PATH`): no name, no URLs. */
export function pathMirror (path: string): MirrorConfig {
  return { name: '', path, dealUrl: '', apiUrl: '', pointerUrl: '', uploadUrl: '', gateways: [], deal: false, maxLagSeconds: 0 }
}
