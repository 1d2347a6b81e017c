import type { WatcherStatus } from '../watch/index.js'
import type { RecentError, ResolvedError } from './status-document.js'

/** How many current errors, and how many resolved ones, status keeps. */
export const DEFAULT_RECENT_ERRORS = 20
export const DEFAULT_RESOLVED_ERRORS = 10

/**
 * What an error is about, so the daemon can tell when it is over: `publish`, `reconcile`, `drill`,
 * `service`, `index` (writes), `drift` or `folder:NAME`. Undefined for an error nothing later
 * says is fixed (a refused reload): it stays current until pushed out by newer ones.
 */
export function errorTopic (message: string, fields: Readonly<Record<string, unknown>>, code: string | undefined): string | undefined {
  if (message === 'publish failed') return 'publish'
  if (message === 'reconcile failed') return 'reconcile'
  if (message.startsWith('restore drill')) return 'drill'
  if (message === 'the service could not be reached' || message === 'reaching the service stopped') return 'service'
  if (code === 'ERR_INDEX_WRITE') return 'index'
  if (typeof fields.folder === 'string') return message.startsWith('the drift check') ? 'drift' : `folder:${fields.folder}`
  return undefined
}

/**
 * Whether what `topic` is about works now, by the daemon's state (what sync events do not
 * say): the service reached, index writes going through, a drift run since the error without
 * one, the folder watched again (or gone from the config, its errors with it).
 */
export function isFixed (topic: string, since: string, now: { readonly serviceReached: boolean, readonly watch: WatcherStatus | undefined }): boolean {
  const watch = now.watch
  if (topic === 'service') return now.serviceReached
  if (watch === undefined) return false
  if (topic === 'index') return watch.writer.state === 'ok'
  if (topic === 'drift') return watch.drift.lastError === null && watch.drift.lastRunAt !== null && watch.drift.lastRunAt > since
  if (!topic.startsWith('folder:')) return false
  const folder = watch.folders.find(f => f.name === topic.slice('folder:'.length))
  return folder === undefined || (folder.error === undefined && folder.state !== 'error')
}

interface Held extends RecentError { readonly topic: string | undefined }

/**
 * The errors /status lists: current ones until what they were about works again (a publish
 * failed, then one went through), then moved to a short list of resolved ones with when. Bounded
 * both ways; the oldest go first.
 */
export class RecentErrors {
  private current: Held[] = []
  private readonly resolved: ResolvedError[] = []

  constructor (private readonly keep = DEFAULT_RECENT_ERRORS, private readonly keepResolved = DEFAULT_RESOLVED_ERRORS) {}

  /**
   * Lists an error; the same error again (message, code and topic; the detail may differ, the
   * last is kept) is folded into the one listed, counted, with its first and last time, and moves
   * to the newest place: a failure retried every few seconds would otherwise fill the list and
   * push out every other error.
   */
  record (error: RecentError, topic: string | undefined): void {
    const same = this.current.findIndex(e => e.message === error.message && e.code === error.code && e.topic === topic)
    const before = same === -1 ? undefined : this.current.splice(same, 1)[0]
    const count = (before?.count ?? 0) + (error.count ?? 1)
    this.current.push({ ...error, count, firstAt: before?.firstAt ?? error.firstAt ?? error.at, topic })
    if (this.current.length > this.keep) this.current.shift()
  }

  /** What `topic` was about works again: its errors move to the resolved list. */
  resolve (topic: string, at = new Date()): void {
    if (!this.current.some(e => e.topic === topic)) return
    const resolvedAt = at.toISOString()
    for (const { topic: t, ...error } of this.current) if (t === topic) this.resolved.push({ ...error, resolvedAt })
    this.current = this.current.filter(e => e.topic !== topic)
    this.resolved.splice(0, Math.max(0, this.resolved.length - this.keepResolved))
  }

  /** Resolves each topic listed now for which `fixed` answers true (the daemon's state says so). */
  resolveWhere (fixed: (topic: string, since: string) => boolean): void {
    const topics = new Map<string, string>()
    for (const e of this.current) if (e.topic !== undefined && !topics.has(e.topic)) topics.set(e.topic, e.at)
    for (const [topic, since] of topics) if (fixed(topic, since)) this.resolve(topic)
  }

  /** Still wrong, oldest first. */
  list (): RecentError[] {
    return this.current.map(({ topic: _topic, ...error }) => error)
  }

  /** Fixed since, oldest first. */
  resolvedList (): ResolvedError[] {
    return [...this.resolved]
  }
}
