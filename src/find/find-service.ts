import { join } from 'node:path'
import { openIndex, readDeviceId, type Index } from '../index/index.js'
import { SearchCache } from './search-cache.js'
import { HISTORY_ROWS_FILE, HistoryRows } from './history-rows.js'
import { find, type FindQuery } from './find.js'
import { where } from './where.js'
import { fileTimeline } from './file-log.js'
import { browse } from './browse.js'
import { NotReadyError } from '../errors.js'
import type { ContentActivity } from './stored-state.js'
import { STATE_NAMES } from '../config/index.js'

/** A past publish's index, built (or found built) for a time: see `pastIndex`. */
export type PastAt = (at: Date) => Promise<{ readonly publish: { readonly cid: string, readonly at: string, readonly device: string }, readonly indexPath: string, readonly searchPath: string }>

/** Holders `/where` answers at most unless asked for more: the empty file's CID alone can be held by every device thousands of times. */
export const DEFAULT_WHERE_LIMIT = 1_000

/** Rows a request copies into the search cache at most: a whole build spreads over requests instead of stalling the daemon. */
export const DAEMON_CATCH_UP_BUDGET = 50_000

/**
 * What the status endpoint's `/search`, `/where`, `/log` and `/browse` answer, as JSON-ready
 * objects, from the daemon's index and the caches beside it (opened on first use). `/log`
 * shows the history kept so far; `cidsync log` fetches the rest.
 */
export class FindService {
  private cache: SearchCache | undefined
  private history: HistoryRows | undefined

  /** The last past publish browsed, kept open: the page browses one publish several levels deep. */
  private past: { cid: string, index: Index, cache: SearchCache } | undefined

  constructor (private readonly index: () => Index | undefined, private readonly stateDir: string, private readonly budget = DAEMON_CATCH_UP_BUDGET, private readonly pastAt?: PastAt,
    private readonly activity: () => ContentActivity | undefined = () => undefined,
    /** The history the timeline is shown for (historyChainKey of the config's namespace and network). */
    private readonly chain?: string) {}

  search (query: FindQuery): object {
    const { index, cache, complete } = this.caughtUp()
    const result = find(cache, index, query, this.activity())
    return {
      results: result.results.map(r => ({ device: r.deviceId, folder: r.folder, path: r.path, size: r.size, mtime: new Date(r.mtimeMs).toISOString(), cid: r.cid, deleted: r.deleted, stored: r.stored })),
      more: result.more,
      complete
    }
  }

  where (cid: string, limit = DEFAULT_WHERE_LIMIT): object {
    const { index, cache, complete } = this.caughtUp()
    const result = where(cache, index, cid, { includeDeleted: true, limit })
    return { ...result, holders: result.holders.map(h => ({ ...h, since: new Date(h.since).toISOString() })), complete }
  }

  log (folder: string, path: string): object {
    const index = this.ready()
    this.history ??= new HistoryRows(join(this.stateDir, HISTORY_ROWS_FILE))
    const timeline = fileTimeline(index, this.history, folder, path, this.activity(), this.chain)
    return {
      folder,
      path,
      publishesKept: timeline.publishes ?? this.history.counts().publishes,
      versions: timeline.versions.map(v => ({ ...v, at: new Date(v.at).toISOString(), mtime: new Date(v.mtimeMs).toISOString() }))
    }
  }

  browse (deviceId: string | undefined, prefix: string): object {
    const { index, cache, complete } = this.caughtUp()
    return { ...browse(cache, index, deviceId, prefix, readDeviceId(this.stateDir)), complete }
  }

  /** {@link browse} as the newest publish at or before `at` saw it (its index fetched and built once, then kept). */
  async browseAt (deviceId: string | undefined, prefix: string, at: Date): Promise<object> {
    if (this.pastAt === undefined) throw new NotReadyError('not ready: browsing a past publish waits for the service to be reached', 5)
    const found = await this.pastAt(at)
    if (this.past?.cid !== found.publish.cid) {
      this.closePast()
      const index = openIndex(found.indexPath, { readonly: true })
      const cache = new SearchCache(found.searchPath)
      this.past = { cid: found.publish.cid, index, cache }
    }
    const past = this.past as NonNullable<FindService['past']>
    past.cache.catchUp(past.index)
    return { ...browse(past.cache, past.index, deviceId, prefix, readDeviceId(this.stateDir)), complete: true, publish: found.publish }
  }

  private closePast (): void {
    this.past?.cache.close()
    this.past?.index.close()
    this.past = undefined
  }

  close (): void {
    this.closePast()
    this.cache?.close()
    this.history?.close()
  }

  private ready (): Index {
    const index = this.index()
    if (index === undefined) throw new NotReadyError('not ready: the index is not open yet', 2)
    return index
  }

  private caughtUp (): { index: Index, cache: SearchCache, complete: boolean } {
    const index = this.ready()
    this.cache ??= new SearchCache(join(this.stateDir, STATE_NAMES.searchCache))
    const { complete } = this.cache.catchUp(index, { budget: this.budget })
    return { index, cache: this.cache, complete }
  }
}
