import type { CidProfileName } from '../content/index.js'
import type { RetentionPolicy } from '../retention/index.js'
import type { ListenAddress } from './listen-address.js'
import type { LOG_LEVELS } from './schema.js'

/** A watched folder, its path absolute. */
export interface FolderConfig {
  readonly name: string
  readonly path: string
  readonly ignore: readonly string[]
  readonly followSymlinks: boolean
  /** Store the folder's files' content (docs/content-format.md), not only index them. */
  readonly store?: boolean
  /**
   * cidsync's own dirs inside this folder (the state dir, the embedded service's dir), never
   * indexed, scanned or watched; absent when there are none. Set by the config loader.
   */
  readonly exclude?: readonly ExcludedDir[]
}

/** One of cidsync's own dirs that lies inside a watched folder. */
export interface ExcludedDir {
  /** Its path relative to the folder, `/`-separated. */
  readonly path: string
  /** Its absolute path, as configured. */
  readonly dir: string
  /** What it is, for messages: "the state dir". */
  readonly what: string
}

/**
 * Another service every publish and stored object is copied to (docs/mirrors.md): its base URLs
 * (one `url` fills them all), whether deals are asked there, and how far it may lag.
 */
export interface MirrorConfig {
  readonly name: string
  /** A folder on this machine, for the backend that reads a path (a plain directory); '' for a URL. */
  readonly path: string
  /**
   * A URL whose scheme is not http(s): the backend registered for that scheme reads it
   * (store/backends.ts). Absent for a path and for a service's http(s) URLs.
   */
  readonly url?: string
  readonly dealUrl: string
  readonly apiUrl: string
  readonly pointerUrl: string
  readonly uploadUrl: string
  readonly gateways: readonly string[]
  /** Ask the mirror's deal service for a deal of each object (needs `dealUrl`, and `[snapshot] deal`). */
  readonly deal: boolean
  /** Past this, `status --check` fails for the mirror. */
  readonly maxLagSeconds: number
}

/** `[retention]`: which publishes to keep, and when and how carefully to forget the rest (docs/retention.md). */
export interface RetentionConfig {
  readonly policy: RetentionPolicy
  /** An object younger than this is never pruned. */
  readonly pruneMarginSeconds: number
  readonly schedule: string
  /** The IANA zone of the policy's hours, days, weeks, months and years. */
  readonly timeZone: string
  /** True where `time_zone` was not set: the system's zone is used. */
  readonly systemZone?: boolean
}

/** The validated config with every path resolved: what the rest of cidsync reads. */
export interface Config {
  /** The file it came from, if any. */
  readonly source: string | undefined
  readonly namespace: string
  readonly network: string
  readonly stateDir: string
  readonly cidProfile: CidProfileName
  readonly logLevel: (typeof LOG_LEVELS)[number]
  readonly folders: readonly FolderConfig[]
  readonly status: {
    readonly listen: ListenAddress
    /** `/metrics` needs the status token too. */
    readonly metricsToken: boolean
  }
  readonly service: {
    readonly mode: 'embedded' | 'remote'
    readonly dir: string
    readonly dealUrl: string
    readonly apiUrl: string
    readonly pointerUrl: string
    readonly uploadUrl: string
    readonly gateways: readonly string[]
  }
  /** Second homes: every publish and stored object replicated to each, in order (docs/mirrors.md). */
  readonly mirrors: readonly MirrorConfig[]
  /** What `cidsync local-service` (the self-hosted service) allows: who signs up, what each account holds. */
  readonly localService: {
    /** Unset: open when it listens on loopback, closed on any other address. */
    readonly signup: 'open' | 'allowlist' | 'invite' | 'closed' | undefined
    readonly allow: readonly string[]
    /** New accounts open sign-up makes in an hour; 0: no limit. */
    readonly signupsPerHour: number
    /** 0: no limit. */
    readonly maxBytesPerAccount: number
    /** The bytes of every account's uploads together; 0: no limit. */
    readonly maxBytesTotal: number
    /** 0: no limit. */
    readonly maxIpnsKeysPerAccount: number
    readonly maxConnections: number
    /** The most bytes one gateway CAR response sends (a small DAG of repeated links, with `dups=y`, would send far more than it holds). */
    readonly maxCarBytes: number
    /** `Host` values it answers besides its own loopback address: what a reverse proxy in front of it sends. */
    readonly hosts: readonly string[]
  }
  readonly snapshot: {
    readonly schedule: string
    readonly encryption: 'aes-256-gcm' | 'none'
    /** Merge (and restore) snapshots with no cipher even though this device encrypts. */
    readonly acceptUnencrypted: boolean
    readonly deal: boolean
    /** An ipnsName to publish to, `auto` to make one on first use, or empty for none. */
    readonly ipnsKey: string
    readonly minIntervalSeconds: number
    readonly quietSeconds: number
    /** A publish that drops more of this device's entries than both of these at once is held until confirmed. */
    readonly maxDropEntries: number
    readonly maxDropFraction: number
    /** This device writes a new base of its rows instead of a delta once it has this many deltas... */
    readonly compactAfterDeltas: number
    /** ...or once its deltas' bytes pass this fraction of its base's. */
    readonly compactFraction: number
  }
  /** Storing files' content (docs/content-format.md): only for folders with `store`. */
  readonly content: {
    readonly encryption: 'aes-256-gcm' | 'none'
    /** Bytes a second for content uploads; 0 = unlimited. */
    readonly uploadRate: number
    /** Larger files are indexed, not stored, and listed as such. */
    readonly maxFileSize: number
    /** Globs (as a folder's `ignore`) of files indexed but never stored. */
    readonly exclude: readonly string[]
    readonly concurrency: number
  }
  /** The restore drill (`cidsync verify`) on a schedule; empty: only on request. */
  readonly verify: { readonly schedule: string }
  readonly reconcile: { readonly schedule: string }
  readonly watch: {
    /** Hashing threads; 0 in the file means one per core. */
    readonly hashWorkers: number
    readonly settleMs: number
    /** Between drift checks (a fresh walk compared with the index); 0 = only on request. */
    readonly rescanIntervalSeconds: number
  }
  /** Undefined when the file has no `[retention]`: every publish is kept, nothing is ever forgotten. */
  readonly retention: RetentionConfig | undefined
}
