import { UsageError } from '../errors.js'

/** The import parameters that decide a file's CID: the same bytes give the same CID only under the same profile. */
export interface CidProfile {
  readonly name: CidProfileName
  readonly cidVersion: 0 | 1
  /** Fixed-size chunker: bytes per leaf. */
  readonly chunkSize: number
  /** Balanced layout: children per interior node. */
  readonly maxLinks: number
  /** Leaves as raw blocks (codec raw) instead of dag-pb UnixFS nodes. */
  readonly rawLeaves: boolean
}

export const CID_PROFILE_NAMES = ['kubo-cidv1', 'unixfs-v0-2015', 'unixfs-v1-2025'] as const
export type CidProfileName = (typeof CID_PROFILE_NAMES)[number]

/** The profile cidsync uses unless told otherwise. */
export const DEFAULT_CID_PROFILE: CidProfileName = 'kubo-cidv1'

const KIB = 1024

export const CID_PROFILES: Readonly<Record<CidProfileName, CidProfile>> = {
  // Kubo's `ipfs add` with no flags.
  'unixfs-v0-2015': { name: 'unixfs-v0-2015', cidVersion: 0, chunkSize: 256 * KIB, maxLinks: 174, rawLeaves: false },
  // Kubo's `ipfs add --cid-version=1`.
  'kubo-cidv1': { name: 'kubo-cidv1', cidVersion: 1, chunkSize: 256 * KIB, maxLinks: 174, rawLeaves: true },
  // The 2025 profile of IPIP-499: 1 MiB chunks, wide nodes.
  'unixfs-v1-2025': { name: 'unixfs-v1-2025', cidVersion: 1, chunkSize: 1024 * KIB, maxLinks: 1024, rawLeaves: true }
}

export function isCidProfileName (name: string): name is CidProfileName {
  return (CID_PROFILE_NAMES as readonly string[]).includes(name)
}

/** Looks a profile up by name; an unknown name is a usage error that lists the known ones. */
export function cidProfile (name: string): CidProfile {
  if (!isCidProfileName(name)) {
    throw new UsageError(`unknown CID profile "${name}": use one of ${CID_PROFILE_NAMES.join(', ')}`)
  }
  return CID_PROFILES[name]
}
