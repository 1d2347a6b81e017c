import { CID } from 'multiformats/cid'
import { CidsyncError, ContentNotFoundError, ExportIncompleteError, GatewayFetchError, IntegrityError, NothingAtTimeError, ServiceDataDamagedError } from '../errors.js'
import type { ObjectHome } from '../store/index.js'
import { checkOwnPublishIn, publishAt, removeDeadRunFiles, hasSyncState, type FetchInit, type HistoryEntry, type ManifestCache, type Repository, type SyncStore } from '../sync/index.js'
import { MAX_SEALED_MANIFEST_BYTES, segmentLinks, type Manifest } from '../snapshot/index.js'
import { failpoint } from '../util/failpoint.js'
import { chainObjects, contentObjects, type ChainObject } from './chain-objects.js'
import { exportRoot, type ExportRoot, type WalkedPublish } from './export-root.js'

/** What every export asks: which publish, whether with content, and how to read it. */
export interface ExportWalkInit {
  /** The newest publish at or before this time instead of the pointer's. */
  readonly at?: Date
  /** Every stored content object the root's records name, too. */
  readonly content?: boolean
  readonly signal?: AbortSignal
}

/** Told after each object is in place. */
export interface ExportProgress {
  readonly cid: string
  readonly kind: ChainObject['kind']
  readonly objects: number
  readonly bytes: number
}

/** What every export's result says of the history it took. */
export interface ExportedHistory {
  /** The plain root of the publish exported, which links every object of the export. */
  readonly root: string
  /** The publish exported: its manifest's CID. */
  readonly publish: string
  readonly at: string
  readonly publishes: number
  readonly segments: number
  readonly contentObjects: number
  /** Objects of older versions a prune deleted: not in the export (the versions kept are). */
  readonly contentPruned: number
  /** The publishes, segments and content objects. */
  readonly objects: number
  /** Bytes of the objects: the files as uploaded. */
  readonly bytes: number
}

/** One object of the walk, with the most its bytes may weigh. */
export type WalkedObject = ChainObject & { readonly maxBytes?: number }

function memoryCache (): ManifestCache {
  const kept = new Map<string, string>()
  return { get: cid => kept.get(cid), put: (cid, json) => { kept.set(cid, json) } }
}

/**
 * The objects an export holds, whatever it writes them to: the publish at the pointer (or at
 * `at`), every publish of its history with the segments they name, and with `content` the content
 * objects its records name. It counts what was walked, and makes the plain root over it at the end.
 */
export class ExportWalk {
  readonly counts = { publishes: 0, segments: 0, contentObjects: 0, objects: 0, bytes: 0 }
  /** Older versions' objects the store no longer lists (pruned), left out. */
  private readonly pruned = { pruned: 0 }
  /** The publish exported: its manifest's CID. */
  readonly publish: string
  /** The publish's time, once walked (with `at`, at once). */
  at: string
  /** The publish's history entry, once walked. */
  head: HistoryEntry | undefined
  private rootManifest: Manifest | undefined
  /** What the plain root links: each publish with its segments, newest first, and the content objects' sizes. */
  private readonly publishes: WalkedPublish[] = []
  private readonly contentSizes = new Map<string, number>()

  private constructor (
    private readonly clients: ObjectHome,
    private readonly init: ExportWalkInit,
    readonly fetch: FetchInit,
    private readonly store: SyncStore | undefined,
    private readonly cache: ManifestCache,
    found: { readonly cid: string, readonly at?: string }
  ) {
    this.publish = found.cid
    this.at = found.at ?? ''
  }

  /**
   * Finds the publish to export: the pointer's, or the newest at or before `at`, refused when its
   * history lacks this device's own last publish. Removes what dead exports left in the state dir.
   */
  static async open (repository: Repository, init: ExportWalkInit): Promise<ExportWalk> {
    const { config, home: clients } = repository
    const fetch = repository.readContext('export', { signal: init.signal })
    // An export leaves no sync state where there was none (a fresh device exporting a backup).
    const store = hasSyncState(config.stateDir) ? repository.store : undefined
    const cache = store?.manifestCache ?? memoryCache()
    const pointer = await clients.pointers.current(config.namespace, config.network, { signal: init.signal })
    let found: { cid: string, at?: string } = { cid: pointer.snapshotCid }
    if (init.at !== undefined) {
      const entry = (await publishAt(clients, pointer.snapshotCid, init.at, cache, fetch))?.entry
      if (entry === undefined) throw new NothingAtTimeError(`nothing was published at or before ${init.at.toISOString()}: see \`cidsync history\` for the times there are`)
      checkOwnPublishIn(entry, store?.lastPublished(), init.at)
      found = entry
    }
    await removeDeadRunFiles(config.stateDir)
    return new ExportWalk(clients, init, fetch, store, cache, found)
  }

  /** The chain's objects, root first, then with `content` the content objects its records name. */
  async * objects (): AsyncGenerator<WalkedObject> {
    for await (const object of chainObjects(this.clients, this.publish, this.cache, this.fetch)) {
      if (object.kind === 'manifest' || object.kind === 'snapshot') {
        if (this.counts.publishes++ === 0) {
          // The pointer set back behind this device's own publish: a backup of an older state
          // would pass for the latest (with `at`, checked at open).
          if (this.init.at === undefined) checkOwnPublishIn({ cid: object.cid, at: object.at ?? '', publishedAs: object.entry?.publishedAs }, this.store?.lastPublished(), new Date())
          this.at = object.at ?? ''
          this.head = object.entry
          this.rootManifest = object.manifest
        }
        this.publishes.push({ cid: object.cid, segments: segmentLinks(object.manifest) })
      } else this.counts.segments++
      yield { ...object, maxBytes: object.bytes ?? (object.kind === 'manifest' ? MAX_SEALED_MANIFEST_BYTES : undefined) }
    }
    if (this.init.content === true && this.rootManifest !== undefined) {
      for await (const object of contentObjects(this.clients, this.rootManifest, this.fetch, this.contentSizes, this.pruned)) {
        this.counts.contentObjects++
        yield object
      }
    }
  }

  /** Whether `cid` is one of the publishes walked: the one exported or one before it. */
  holds (cid: string): boolean {
    return this.publishes.some(p => p.cid === cid)
  }

  /** Counts an object in place, `size` bytes; answers the progress to tell. */
  done (object: ChainObject, size: number): ExportProgress {
    this.counts.bytes += size
    this.counts.objects++
    failpoint('export:object')
    return { cid: object.cid, kind: object.kind, objects: this.counts.objects, bytes: this.counts.bytes }
  }

  /** What was walked, once it all was; `root`: the plain root's CID. */
  exported (root: string): ExportedHistory {
    const { publishes, segments, contentObjects, objects, bytes } = this.counts
    return { root, publish: this.publish, at: this.at, publishes, segments, contentObjects, contentPruned: this.pruned.pruned, objects, bytes }
  }

  /** The plain root over what was walked (docs/snapshot-format.md, "The plain root"). */
  plainRoot (): ExportRoot {
    // In CID order, as a publish's own root lists them: the same content gives the same tree.
    const content = this.init.content === true ? [...this.contentSizes].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([cid, size]) => ({ cid: CID.parse(cid), size })) : undefined
    return exportRoot(this.publishes, content)
  }

  /**
   * The error to throw for an object that failed, naming it and what it is; `left` says what the
   * export left behind (no CAR, no pointer).
   */
  failure (object: ChainObject, err: unknown, left: string): unknown {
    const about = `${object.kind} ${object.cid} (${object.about})`
    if (err instanceof IntegrityError) return new IntegrityError(`${about}: ${err.message}; ${left}`, { cause: err })
    if (err instanceof ServiceDataDamagedError) return new ServiceDataDamagedError(`${about}: ${err.message}; ${left}`, { cause: err })
    if (err instanceof ContentNotFoundError || err instanceof GatewayFetchError) {
      return new ExportIncompleteError(`could not export ${about}: ${(err as CidsyncError).message}; ${left}. ` +
        (object.kind !== 'content'
          ? 'Run `cidsync verify --full`; publish again from a device that holds the files, then export again'
          // A prune's repack moves a kept publish's files to packs only later publishes name.
          : this.init.at !== undefined
            ? 'A prune may have rewritten this publish\'s content into packs only later publishes name (docs/retention.md, "Repack"). ' +
              'Export the whole history instead (without --at): it brings this publish back whole. Or export without --content'
            : 'Run `cidsync verify --content` to see which files it holds, or export without --content'), object.cid, { cause: err })
    }
    return err
  }

}
