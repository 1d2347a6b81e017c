import { snapshotPassphrase, type Config } from '../config/index.js'
import type { ObjectHome, ObjectStore, PointerRegistry } from '../store/index.js'
import { openPastIndex, readContext, type FetchInit, type ManifestCache, type PastIndex, type ReadContextOptions } from './read/index.js'
import { hasSyncState, SyncStore, type LastPublished } from './state/index.js'

export interface RepositoryOptions {
  /** The passphrase, when the caller read it already; else the environment's, read once here. */
  readonly passphrase?: string
  /** The process's sync store, when its owner opened one; else one is opened here if the state dir has one. */
  readonly store?: SyncStore
}

/** Manifests read in this process alone: where there is no sync store to keep them. */
function memoryCache (): ManifestCache {
  const kept = new Map<string, string>()
  return { get: (cid) => kept.get(cid), put: (cid, json) => { kept.set(cid, json) } }
}

/**
 * What cidsync keeps on one home, opened once per process from the config: its objects and
 * pointer, the passphrase (read once), the namespace binding and the unencrypted policy (in each
 * read context), the manifests already read, and one cache of past indexes. `get --at`,
 * `restore --files --at`, `find --at` and `export` read through it. Its owner closes it.
 */
export class Repository {
  readonly objects: ObjectStore
  readonly pointers: PointerRegistry
  readonly passphrase: string | undefined
  private readonly given: SyncStore | undefined
  private opened: SyncStore | undefined
  private readonly shared: boolean
  private readonly memory = memoryCache()
  private readonly pasts = new Map<string, Promise<PastIndex>>()

  constructor (readonly config: Config, readonly home: ObjectHome, options: RepositoryOptions = {}) {
    this.objects = home.objects
    this.pointers = home.pointers
    this.passphrase = options.passphrase ?? snapshotPassphrase()
    this.given = options.store
    this.shared = options.store !== undefined
  }

  /**
   * The sync store the manifest cache and this device's last publish come from: the one given,
   * else this state dir's, opened at first use (a state dir that never synced has none).
   */
  get store (): SyncStore | undefined {
    if (this.given !== undefined) return this.given
    if (this.opened === undefined && hasSyncState(this.config.stateDir)) this.opened = new SyncStore(this.config.stateDir)
    return this.opened
  }

  /** The same repository on another home (a mirror, a directory): its passphrase and sync store shared. */
  other (home: ObjectHome): Repository {
    const store = this.store
    return new Repository(this.config, home, { passphrase: this.passphrase, ...(store === undefined ? {} : { store }) })
  }

  /** What reading a publish needs: the binding, this repository's passphrase, the policy. */
  readContext (label: string, options: Omit<ReadContextOptions, 'label' | 'passphrase'> = {}): FetchInit {
    return readContext(this.config, { ...options, label, passphrase: this.passphrase })
  }

  /** Manifests already read: the sync store's, else this process's. */
  get manifestCache (): ManifestCache {
    return this.store?.manifestCache ?? this.memory
  }

  /** This device's own last publish, as its sync store recorded it. */
  lastPublished (): LastPublished | undefined {
    return this.store?.lastPublished()
  }

  /**
   * The index the newest publish at or before `at` held, opened once per pointer and time in
   * this process. The caller does not close it: the repository does.
   */
  async pastIndex (at: Date, options: { readonly signal?: AbortSignal } = {}): Promise<PastIndex> {
    const store = { manifestCache: this.manifestCache, lastPublished: () => this.lastPublished() }
    const key = at.toISOString()
    let opening = this.pasts.get(key)
    if (opening === undefined) {
      opening = openPastIndex({ clients: this.home, store }, this.config, at, { passphrase: this.passphrase, signal: options.signal })
      this.pasts.set(key, opening)
      // A failed open is not kept: the next call tries again.
      opening.catch(() => { this.pasts.delete(key) })
    }
    return await opening
  }

  async close (): Promise<void> {
    const opened = [...this.pasts.values()]
    this.pasts.clear()
    for (const past of await Promise.allSettled(opened)) if (past.status === 'fulfilled') await past.value.close()
    if (!this.shared) this.opened?.close()
    this.opened = undefined
  }
}
