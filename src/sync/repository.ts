import { snapshotPassphrase, type Config } from '../config/index.js'
import { isServiceHome, type DealRegistry, type NameRegistry, type ObjectHome, type ObjectStore, type PointerRegistry } from '../store/index.js'
import { openBuiltPast, pastIndex, readContext, type BuiltPast, type FetchInit, type ManifestCache, type PastIndex, type ReadContextOptions } from './read/index.js'
import { SyncStore, type LastPublished } from './state/index.js'

/** Which chain a past read walks: the config's namespace and network unless named. */
export interface PastOptions {
  readonly namespace?: string
  readonly network?: string
  readonly signal?: AbortSignal
}

export interface RepositoryOptions {
  /** The passphrase, when the caller read it already; else the environment's, read once here. */
  readonly passphrase?: string
  /** The process's sync store, when its owner opened one; else one is opened here at first use. */
  readonly store?: SyncStore
}

/** The sync store siblings share: given by an owner, or opened by the first that needs it. */
interface StoreHolder { store: SyncStore | undefined, readonly owned: boolean }

/**
 * What cidsync keeps on one home, opened once per process from the config: its objects and
 * pointer, the passphrase (read once), the namespace binding and the unencrypted policy (in each
 * read context), the manifests already read, and one cache of past indexes. `get --at`,
 * `restore --files --at`, `find --at` and `export` read through it. Its owner closes it.
 */
export class Repository<H extends ObjectHome = ObjectHome> {
  readonly objects: ObjectStore
  readonly pointers: PointerRegistry
  /** The home's names and deals: a service has them, a directory has none. */
  readonly names: NameRegistry | undefined
  readonly deals: DealRegistry | undefined
  readonly passphrase: string | undefined
  private readonly holder: StoreHolder
  /** A sibling made by {@link other}: the first repository closes what they share. */
  private readonly sibling: boolean
  private readonly pasts = new Map<string, Promise<PastIndex>>()

  private readonly configNow: () => Config

  /** `config`: the config, or a getter for the one now where a reload may replace it (the daemon). */
  constructor (config: Config | (() => Config), readonly home: H, options: RepositoryOptions = {}, holder?: StoreHolder) {
    this.configNow = typeof config === 'function' ? config : () => config
    this.objects = home.objects
    this.pointers = home.pointers
    const service = isServiceHome(home) ? home : undefined
    this.names = service?.names
    this.deals = service?.deals
    this.passphrase = options.passphrase ?? snapshotPassphrase()
    this.sibling = holder !== undefined
    this.holder = holder ?? { store: options.store, owned: options.store === undefined }
  }

  /** The config now: a daemon's reload may replace it, never its state dir nor its service. */
  get config (): Config {
    return this.configNow()
  }

  /**
   * The sync store the manifest cache and this device's last publish come from: the one given,
   * else this state dir's, opened (made if missing) at first use, so a manifest read once is kept
   * for the next run. A command that must leave no state (`verify` on a fresh device) never asks.
   */
  get store (): SyncStore {
    this.holder.store ??= new SyncStore(this.config.stateDir)
    return this.holder.store
  }

  /**
   * The same repository on another home (a mirror, a directory): its passphrase and sync store
   * shared, the store still opened only at first use.
   */
  other<O extends ObjectHome> (home: O): Repository<O> {
    return new Repository(this.configNow, home, { passphrase: this.passphrase }, this.holder)
  }

  /** What reading a publish needs: the binding, this repository's passphrase, the policy. */
  readContext (label: string, options: Omit<ReadContextOptions, 'label' | 'passphrase'> = {}): FetchInit {
    return readContext(this.config, { ...options, label, passphrase: this.passphrase })
  }

  /** Manifests already read, kept in the sync store. */
  get manifestCache (): ManifestCache {
    return this.store.manifestCache
  }

  /** This device's own last publish, as its sync store recorded it. */
  lastPublished (): LastPublished | undefined {
    return this.store.lastPublished()
  }

  /**
   * The index the newest publish at or before `at` held, built once into the state dir's `past/`
   * and kept there (`find --at`, the dashboard's browser). The history is walked from the pointer of
   * the chain asked. In this device's own chain, a history without its last publish is refused:
   * the service set the pointer back.
   */
  async pastPublish (at: Date, options: PastOptions = {}): Promise<BuiltPast> {
    const { config } = this
    const namespace = options.namespace ?? config.namespace
    const network = options.network ?? config.network
    const pointer = await this.pointers.current(namespace, network, { signal: options.signal })
    const own = namespace === config.namespace && network === config.network ? this.lastPublished() : undefined
    return await pastIndex(this.home, pointer.snapshotCid, at, this.manifestCache, this.readContext('past', options), own)
  }

  /**
   * That index of this device's chain opened read-only, for a read that brings files back (a
   * daemon's download): the caller closes it. Bound to this namespace, so another's rows are never
   * written into this one's folders.
   */
  async openPast (at: Date, options: { readonly signal?: AbortSignal } = {}): Promise<PastIndex> {
    return openBuiltPast(await this.pastPublish(at, options), at)
  }

  /**
   * The same, opened once per time asked in this process (`get --at`, `restore --files --at`).
   * The caller does not close it: the repository does.
   */
  async pastIndex (at: Date, options: { readonly signal?: AbortSignal } = {}): Promise<PastIndex> {
    const key = at.toISOString()
    let opening = this.pasts.get(key)
    if (opening === undefined) {
      opening = this.openPast(at, options)
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
    if (!this.sibling && this.holder.owned) {
      this.holder.store?.close()
      this.holder.store = undefined
    }
  }
}
