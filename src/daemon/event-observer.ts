import type { SyncEvent } from '../sync/index.js'
import type { WatcherStatus } from '../watch/index.js'
import type { EventBus } from './event-bus.js'

/** How often the watcher's state is looked at for changes (it is in memory: cheap). */
export const WATCH_POLL_MS = 250

export interface EventObserverSources {
  readonly watcher: () => WatcherStatus | undefined
  /** The deal counts now (after reconciliation or a publish asked for one), or undefined before the service is reached. */
  readonly deals: () => { readonly pending: number, readonly overdue: number, readonly made: number } | undefined
}

/**
 * Turns what the daemon's parts already report into events on the bus, so neither watch/ nor sync/
 * knows about the daemon: the watcher's status is compared every {@link WATCH_POLL_MS} (folder
 * state, scan progress), its commit callback gives `index.batch`, the sync runner's callback gives
 * publish and reconcile events (and `merge`, `deals` derived from them), the logger's error hook
 * gives `error`.
 */
export class EventObserver {
  private timer: NodeJS.Timeout | undefined
  private watcherState: string | undefined
  private readonly folders = new Map<string, { state: string, error: string | null, scan: string }>()
  private merges = 0
  private deals: string | undefined

  constructor (private readonly bus: EventBus, private readonly sources: EventObserverSources) {}

  start (): void {
    this.timer ??= setInterval(() => { this.lookAtWatcher() }, WATCH_POLL_MS)
    this.timer.unref()
  }

  stop (): void {
    clearInterval(this.timer)
    this.timer = undefined
  }

  /** The watcher committed a batch that changed `rows` rows. */
  rowsChanged (rows: number): void {
    this.bus.emit('index.batch', { rows, rowsWritten: this.sources.watcher()?.rowsWritten ?? null })
    // A batch often ends a scan phase: say so now rather than at the next look.
    this.lookAtWatcher()
  }

  sync (event: SyncEvent): void {
    const { type, ...data } = event
    if (event.type === 'publish.started') this.merges = 0
    if (event.type === 'publish.step' && event.merges > this.merges) {
      this.merges = event.merges
      this.bus.emit('merge', { merges: event.merges })
    }
    this.bus.emit(type, data)
    if (event.type === 'publish.done' || event.type === 'reconcile.done') this.lookAtDeals()
  }

  error (message: string, code: string | null, detail: string | null): void {
    this.bus.emit('error', { message, code, detail })
  }

  private lookAtDeals (): void {
    let deals
    try {
      deals = this.sources.deals()
    } catch {
      return
    }
    if (deals === undefined) return
    const key = `${deals.pending}/${deals.overdue}/${deals.made}`
    if (key === this.deals) return
    this.deals = key
    this.bus.emit('deals', { pending: deals.pending, overdue: deals.overdue, active: deals.made })
  }

  private lookAtWatcher (): void {
    const status = this.sources.watcher()
    if (status === undefined) return
    if (status.state !== this.watcherState) {
      this.watcherState = status.state
      this.bus.emit('watcher.state', { state: status.state, currentAt: status.currentAt === undefined ? null : new Date(status.currentAt).toISOString() })
    }
    const seen = new Set<string>()
    for (const folder of status.folders) {
      seen.add(folder.name)
      const before = this.folders.get(folder.name)
      const error = folder.error ?? null
      const scan = `${folder.scanned}/${folder.toHash}/${folder.hashed}/${folder.hashedBytes}`
      if (before?.state !== folder.state || before.error !== error) this.bus.emit('folder.state', { folder: folder.name, state: folder.state, error })
      if (before?.scan !== scan) this.bus.emit('scan.progress', { folder: folder.name, scanned: folder.scanned, toHash: folder.toHash, hashed: folder.hashed, hashedBytes: folder.hashedBytes })
      this.folders.set(folder.name, { state: folder.state, error, scan })
    }
    for (const name of this.folders.keys()) {
      if (seen.has(name)) continue
      this.folders.delete(name)
      this.bus.emit('folder.state', { folder: name, state: 'removed', error: null })
    }
  }
}
