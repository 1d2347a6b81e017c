import { type Config } from '../config/index.js'
import type { Index } from '../index/index.js'
import { splitPath, type ContentActivity, type FindService } from '../find/index.js'
import type { DownloadedFile } from '../sync/index.js'
import { DownloadTooLargeError, NotReadyError, PathNotFoundError } from '../errors.js'
import { MAX_DOWNLOAD_BYTES, type DownloadQuery } from './download-route.js'
import type { ServiceLink } from './service-link.js'
import { versionRow } from './version-row.js'

/** What the page's reads need of the daemon, as it is now. */
export interface PageReadsComponents {
  readonly link: () => ServiceLink | undefined
  readonly index: () => Index | undefined
  readonly find: () => FindService | undefined
  readonly config: () => Config
  readonly deviceId: () => string
  /** Aborted when the daemon stops. */
  readonly stopped: AbortSignal
}

/**
 * What the page reads beyond this device's index file: through the service, a past publish's
 * index to browse and one file's content to download (each waits for the service to be reached:
 * 503 till then); from the sync runner, the uploads in flight and failed.
 */
export class PageReads {
  constructor (private readonly components: PageReadsComponents) {}

  /** What the page's find shows of this device's uploads and failures (its rows only). */
  contentActivity (): ContentActivity {
    const live = this.components.link()?.runner?.contentActivity()
    return {
      deviceId: this.components.deviceId(), storing: new Set(this.components.config().folders.filter(f => f.store === true).map(f => f.name)), notStored: live?.notStored,
      uploading: live?.uploading ?? new Set(), failed: live?.failed ?? new Map()
    }
  }

  /** The index as a past publish saw it, for the dashboard's browser: built once through the service, kept in `past/`. */
  async pastAt (at: Date): Promise<{ publish: { cid: string, at: string, device: string }, indexPath: string, searchPath: string }> {
    const access = this.components.link()?.historyAccess()
    if (access === undefined) throw new NotReadyError('not ready: browsing a past publish starts once the service is reached')
    const { stopped } = this.components
    // A pointer set back is refused, as `find --at` refuses it.
    const past = await access.pastPublish(at, { signal: stopped })
    return { publish: { cid: past.publish.cid, at: past.publish.at, device: past.publish.device }, indexPath: past.indexPath, searchPath: past.searchPath }
  }

  /**
   * `GET /download`: one file's content through the service, verified, as `get` (or `get --at`)
   * would bring it back; the row chosen as `get` chooses it (the newest across the devices, this device's on a tie).
   */
  async download (query: DownloadQuery, signal: AbortSignal): Promise<DownloadedFile> {
    const access = this.components.link()?.historyAccess()
    const index = this.components.index()
    if (access === undefined || index === undefined) throw new NotReadyError('not ready: downloads start once the service is reached')
    const config = this.components.config()
    const { downloadFile, selectRows } = await import('../sync/index.js')
    // Opened for this download alone: a daemon asked for many times keeps none open.
    const past = query.at === undefined ? undefined : await access.openPast(query.at, { signal: AbortSignal.any([signal, this.components.stopped]) })
    const from = past?.index ?? index
    try {
      const row = query.cid === undefined
        ? selectRows(from, { paths: [query.path], prefix: false, deviceId: query.device, own: this.components.deviceId() })[0]
        : versionRow(from, query.path, query.cid, config.cidProfile, this.timelineCids(query.path))
      if (row === undefined) throw new PathNotFoundError(`${query.path}: not in the index`)
      if (row.size > MAX_DOWNLOAD_BYTES) throw new DownloadTooLargeError(`${query.path} is ${row.size} bytes, more than the ${MAX_DOWNLOAD_BYTES} the dashboard serves`)
      return await downloadFile(access, from, { row, ...(past === undefined ? {} : { newer: index }), signal: AbortSignal.any([signal, this.components.stopped]) })
    } finally {
      await past?.close()
    }
  }

  /** The CIDs `/log` lists for `folder/path` (kept history and current rows): the versions a `cid=` download may name. */
  private timelineCids (shown: string): Array<string | null> {
    const split = splitPath(shown.replace(/^\/+/, ''))
    const find = this.components.find()
    if (split === undefined || find === undefined) return []
    try {
      return (find.log(split.folder, split.path) as { versions: Array<{ cid: string | null }> }).versions.map(v => v.cid)
    } catch {
      return []
    }
  }
}
