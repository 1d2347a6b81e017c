import { hostname } from 'node:os'
import type { Config } from '../config/index.js'
import { excludedNotes } from '../config/index.js'
import type { FolderTotals, Index } from '../index/index.js'
import type { Watcher } from '../watch/index.js'
import { cidsyncVersion } from '../version.js'
import type { EventBus } from './event-bus.js'
import { authState } from './auth-state.js'
import { isFixed, type RecentErrors } from './recent-errors.js'
import type { ServiceLink } from './service-link.js'
import type { StatusServer } from './status-server.js'
import type { ReloadStatus, StateRecovery, StatusDocument } from './status-document.js'
import { glanceOf } from './status-glance.js'

/** What the status document is read from: the daemon's parts as they are now (any may not exist yet). */
export interface StatusParts {
  readonly config: Config
  readonly deviceId: string
  readonly startedAt: Date
  readonly index: Index | undefined
  readonly watcher: Watcher | undefined
  readonly link: ServiceLink | undefined
  readonly errors: RecentErrors
  readonly account: StatusDocument['account']
  readonly reload: ReloadStatus | null
  readonly events: EventBus
  readonly server: StatusServer | undefined
  readonly recovered: readonly StateRecovery[]
}

/** Files and bytes over all folders. */
export function sumTotals (all: readonly FolderTotals[]): { files: number, bytes: number } {
  return { files: all.reduce((n, t) => n + t.files, 0), bytes: all.reduce((n, t) => n + t.bytes, 0) }
}

/**
 * The document `GET /status` answers, read afresh from the daemon's parts; errors whose topic
 * works again are marked resolved on the way (recent-errors.ts).
 */
export function buildStatus (parts: StatusParts): StatusDocument {
  const watch = parts.watcher?.status()
  parts.errors.resolveWhere((topic, since) => isFixed(topic, since, { serviceReached: parts.link?.runner !== undefined && parts.link.error === undefined, watch }))
  const perFolder = parts.index?.entries.totals(parts.deviceId) ?? []
  const totals = new Map(perFolder.map(t => [t.folder, t]))
  const folders = (watch?.folders ?? []).map(f => ({
    name: f.name,
    path: f.path,
    state: f.state,
    files: totals.get(f.name)?.files ?? 0,
    bytes: totals.get(f.name)?.bytes ?? 0,
    scan: { scanned: f.scanned, toHash: f.toHash, hashed: f.hashed, hashedBytes: f.hashedBytes },
    skipped: f.skipped,
    skippedWithoutContent: f.skippedWithoutContent,
    skippedFiles: f.skippedFiles,
    error: f.error ?? null,
    notes: excludedNotes(parts.config.folders.find(c => c.name === f.name) ?? { name: f.name, path: f.path, ignore: [], followSymlinks: false })
  }))
  const memory = process.memoryUsage()
  const document = {
    version: cidsyncVersion(),
    pid: process.pid,
    startedAt: parts.startedAt.toISOString(),
    uptimeSeconds: uptimeSeconds(parts.startedAt),
    device: { id: parts.deviceId, hostname: hostname() },
    namespace: parts.config.namespace,
    network: parts.config.network,
    stateDir: parts.config.stateDir,
    cidProfile: parts.config.cidProfile,
    service: { mode: parts.config.service.mode, endpoint: parts.link?.connection?.describe ?? null, error: parts.link?.error ?? null },
    publish: parts.link?.publishStatus() ?? null,
    auth: authState(parts.link?.connection),
    reconcile: parts.link?.runner?.reconcileStatus() ?? null,
    account: parts.account,
    content: parts.link?.runner?.contentStatus() ?? null,
    restorable: parts.link?.runner?.restorable() ?? null,
    retention: parts.link?.runner?.retentionStatus() ?? null,
    mirrors: mirrorsOf(parts.link),
    history: parts.link?.runner?.history() ?? [],
    watcher: { state: watch?.state ?? 'starting', currentAt: watch?.currentAt === undefined ? null : new Date(watch.currentAt).toISOString(), hashing: watch?.hashing ?? { files: 0, bytes: 0, bytesRead: 0 } },
    folders,
    index: {
      path: parts.index?.path ?? '',
      ...sumTotals(perFolder),
      rowsWritten: watch?.rowsWritten ?? 0,
      writeErrors: watch?.writeErrors ?? 0,
      writeState: watch?.writer.state ?? 'ok',
      pendingWrites: watch?.writer.pending ?? 0,
      lastError: watch?.writer.lastError === undefined
        ? null
        : { at: new Date(watch.writer.lastError.at).toISOString(), code: watch.writer.lastError.code, message: watch.writer.lastError.message, retryAt: watch.writer.retryAt === undefined ? null : new Date(watch.writer.retryAt).toISOString() }
    },
    drift: watch?.drift ?? null,
    filesSkipped: folders.reduce((n, f) => n + f.skipped, 0),
    memory: { rssBytes: memory.rss, heapUsedBytes: memory.heapUsed },
    lastErrors: parts.errors.list(),
    resolvedErrors: parts.errors.resolvedList(),
    reload: parts.reload,
    events: { lastId: parts.events.lastId, streams: parts.server?.eventStreams.open ?? 0, dropped: parts.server?.eventStreams.dropped ?? 0, peakBufferedBytes: parts.server?.eventStreams.peakBufferedBytes ?? 0 },
    stateFiles: { recovered: [...parts.recovered], leftoversRemoved: parts.link?.leftoversRemoved ?? { files: 0, bytes: 0 }, syncStateError: parts.link?.syncStateError ?? null }
  }
  return { ...document, glance: glanceOf(document) }
}

/** The mirrors' status reads sync.sqlite: an error there leaves them out (stateFiles says why) instead of failing status. */
function mirrorsOf (link: ServiceLink | undefined): NonNullable<StatusDocument['mirrors']> {
  try {
    return link?.runner?.mirrorsStatus() ?? []
  } catch {
    return []
  }
}

/** Seconds since `startedAt`, to a tenth. */
export function uptimeSeconds (startedAt: Date): number {
  return Math.round((Date.now() - startedAt.getTime()) / 100) / 10
}
