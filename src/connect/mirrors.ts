import type { Config, MirrorConfig } from '../config/index.js'
import { MirrorUnknownError } from '../errors.js'
import type { DealsClient } from '../remote/index.js'
import { mirrorBackend, mirrorLocation, type ObjectHome } from '../store/index.js'

export { mirrorCredentialsDir, saveMirrorCredentials } from './mirror-credentials.js'

/** What a mirror is asked: its objects and pointer; a service's deals too (a directory has none). */
export type MirrorClients = ObjectHome & { readonly deals?: DealsClient }

/** A mirror reached: its clients, with the credentials saved for it. */
export interface MirrorConnection {
  readonly name: string
  readonly mirror: MirrorConfig
  readonly clients: MirrorClients
  /** Where it is, for messages: "mirror usb at /media/usb/cidsync". */
  readonly describe: string
  /** Fails once, up front, when the mirror's home is not there (a disk not mounted). */
  ready: () => Promise<void>
  close: () => Promise<void>
}

/** The mirror the config names `name`, or a usage error listing those it has. */
export function findMirror (config: Config, name: string): MirrorConfig {
  const found = config.mirrors.find(m => m.name === name)
  if (found !== undefined) return found
  const known = config.mirrors.map(m => m.name)
  // A path reaches here only where a name is needed (verify --mirror, login --mirror).
  const path = name.includes('/') ? '; a directory is named by a [[mirrors]] table with path = (restore --from and get --from also take its path)' : ''
  throw new MirrorUnknownError(`no mirror named ${JSON.stringify(name)} in the config: ${known.length === 0 ? 'it has no [[mirrors]] table (docs/mirrors.md)' : `it has ${known.join(', ')}`}${path}`)
}

/**
 * The mirror's clients, from the backend its table names (nothing is sent or read until one is
 * used). A store is made only with `create` (`cidsync login --mirror`): an unmounted disk is
 * never filled in its place.
 */
export function connectMirror (config: Config, mirror: MirrorConfig, options: { readonly create?: boolean } = {}): MirrorConnection {
  const opened = mirrorBackend(mirror).open({ config, mirror, create: options.create })
  // Only a service's backend gives deals, and they are its DealsClient.
  const clients = opened.home as MirrorClients
  return { name: mirror.name, mirror, clients, describe: `mirror ${mirror.name} at ${mirrorLocation(mirror)}`, ready: opened.ready, close: opened.close }
}

/** Every configured mirror's clients, in the config's order. */
export function connectMirrors (config: Config): MirrorConnection[] {
  return config.mirrors.map(m => connectMirror(config, m))
}
