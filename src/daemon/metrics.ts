import type { StatusDocument } from './status-document.js'
import type { HistogramSnapshot } from '../util/histogram.js'
import { WATCHER_STATES } from '../watch/index.js'

type Labels = Record<string, string>
interface Sample { readonly labels?: Labels, readonly value: number }

const escapeLabel = (value: string): string => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')

function family (name: string, type: 'gauge' | 'counter', help: string, samples: readonly Sample[]): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`]
  for (const { labels, value } of samples) {
    const rendered = labels === undefined ? '' : `{${Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`
    lines.push(`${name}${rendered} ${Number.isFinite(value) ? value : 0}`)
  }
  return lines.join('\n')
}

function histogram (name: string, help: string, h: HistogramSnapshot | undefined): string {
  if (h === undefined) return ''
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`]
  h.bounds.forEach((bound, i) => lines.push(`${name}_bucket{le="${bound}"} ${h.counts[i] ?? 0}`))
  lines.push(`${name}_bucket{le="+Inf"} ${h.count}`, `${name}_sum ${h.sum}`, `${name}_count ${h.count}`)
  return lines.join('\n')
}

/** Files' content (folders with `store = true`); absent until the service is reached. */
function contentFamilies (status: StatusDocument): string[] {
  const c = status.content
  if (c == null) return []
  const per = (pick: (f: NonNullable<StatusDocument['content']>['folders'][number]) => number): Sample[] => c.folders.map(f => ({ labels: { folder: f.folder }, value: pick(f) }))
  return [
    family('cidsync_content_protected_files', 'gauge', 'Live files of a storing folder whose content is stored.', per(f => f.protected.files)),
    family('cidsync_content_protected_bytes', 'gauge', 'Bytes of those files.', per(f => f.protected.bytes)),
    family('cidsync_content_pending_files', 'gauge', 'Live files of a storing folder whose content is not stored yet (failed ones included, left-out ones not).', per(f => f.pending.files)),
    family('cidsync_content_pending_bytes', 'gauge', 'Bytes of those files.', per(f => f.pending.bytes)),
    family('cidsync_content_left_out_files', 'gauge', 'Live files of a storing folder never stored: [content] exclude, or larger than max_file_size.', per(f => f.leftOut?.files ?? 0)),
    family('cidsync_content_failed_files', 'gauge', 'Files whose last upload failed, waiting for their retry.', per(f => f.failed)),
    family('cidsync_content_upload_rate_bytes', 'gauge', 'Bytes a second the running pass uploads; 0 while idle.', [{ value: c.uploadRate }]),
    family('cidsync_content_uploaded_bytes_total', 'counter', 'Bytes of content stored since start.', [{ value: c.storedBytesTotal }]),
    family('cidsync_content_dedup_saved_bytes', 'gauge', 'Bytes of live files stored without this device uploading them (another device did, or a copy).', [{ value: c.savedByDedup }]),
    family('cidsync_content_index_refused', 'gauge', 'Content index objects refused as damaged or forged: their records are never used.', [{ value: c.indexRefused ?? 0 }]),
    family('cidsync_content_failing_too_long', 'gauge', '1 while an upload has failed for longer than the bound (status --check fails).', [{ value: c.failingTooLong ? 1 : 0 }])
  ]
}

/** Each mirror (docs/mirrors.md); nothing when none is configured. */
function mirrorFamilies (status: StatusDocument): string[] {
  const mirrors = status.mirrors ?? []
  if (mirrors.length === 0) return []
  const per = (pick: (m: NonNullable<StatusDocument['mirrors']>[number]) => number): Sample[] => mirrors.map(m => ({ labels: { mirror: m.name }, value: pick(m) }))
  const drilled = mirrors.filter(m => m.restorable !== null)
  const succeeded = mirrors.filter(m => m.restorable?.lastSuccessAt != null)
  return [
    family('cidsync_mirror_objects_behind', 'gauge', 'Objects stored on the primary and not yet copied to the mirror.', per(m => m.objectsBehind)),
    family('cidsync_mirror_publishes_behind', 'gauge', 'Publishes whose pointer move to the mirror waits.', per(m => m.publishesBehind)),
    family('cidsync_mirror_lag_seconds', 'gauge', 'How long the oldest thing waiting for the mirror has waited (0: caught up).', per(m => m.lagSeconds)),
    family('cidsync_mirror_lagging', 'gauge', '1 while the mirror lags past its max_lag_seconds (status --check fails).', per(m => m.lagging ? 1 : 0)),
    family('cidsync_mirror_objects_missing', 'gauge', 'Objects the primary would not give, skipped so the rest goes on: missing on the mirror until copied (tried again every 10 min).', per(m => m.unavailable.count)),
    family('cidsync_mirror_failing', 'gauge', '1 while copying to the mirror fails (lastError in status says what to do).', per(m => m.lastError === null ? 0 : 1)),
    family('cidsync_mirror_copied_objects_total', 'counter', 'Objects copied to the mirror since start.', per(m => m.copiedTotal)),
    family('cidsync_mirror_last_publish_timestamp_seconds', 'gauge', 'When the mirror\'s pointer was last moved to a publish of this device.', per(m => m.lastPublish === null ? 0 : Date.parse(m.lastPublish.at) / 1000)),
    family('cidsync_mirror_pointer_problem', 'gauge', '1 while the mirror\'s pointer was found ahead of or behind this device\'s.', per(m => m.pointer === null ? 0 : 1)),
    family('cidsync_mirror_restorable', 'gauge', '1 when the last restore drill against the mirror alone restored, 0 when it failed; absent before the first.', drilled.map(m => ({ labels: { mirror: m.name }, value: m.restorable?.ok === true ? 1 : 0 }))),
    family('cidsync_mirror_verify_last_success_timestamp_seconds', 'gauge', 'When a restore drill against the mirror last succeeded (Unix time).', succeeded.map(m => ({ labels: { mirror: m.name }, value: Date.parse(m.restorable?.lastSuccessAt ?? '') / 1000 })))
  ]
}

/** A time as Unix seconds; absent before the first. */
const seconds = (iso: string | undefined): Sample[] => iso === undefined ? [] : [{ value: Date.parse(iso) / 1000 }]
const one = (value: number | undefined): Sample[] => value === undefined ? [] : [{ value }]

/**
 * Forget and prune (docs/retention.md, "The daemon"): the last forget and prune, CLI runs
 * included, and what the account held and a prune would free as of the last count. Each figure
 * comes with the time it was counted; each is absent before the first.
 */
function retentionFamilies (status: StatusDocument): string[] {
  const r = status.retention
  if (r == null) return []
  const f = r.lastForget ?? undefined
  const p = r.lastPrune ?? undefined
  const plan = r.plan ?? undefined
  return [
    family('cidsync_retention_enabled', 'gauge', '1 when the config has [retention]: the daemon forgets and prunes on its schedule.', [{ value: r.enabled ? 1 : 0 }]),
    family('cidsync_retention_failing', 'gauge', '1 while the daemon\'s last forget and prune failed (status says why; it is tried again).', [{ value: r.lastError === null ? 0 : 1 }]),
    family('cidsync_forget_last_timestamp_seconds', 'gauge', 'When the last forget ran (CLI or daemon; Unix time).', seconds(f?.at)),
    family('cidsync_forget_last_kept_publishes', 'gauge', 'Publishes the last forget kept.', one(f?.kept)),
    family('cidsync_forget_last_forgotten_publishes', 'gauge', 'Publishes the last forget forgot.', one(f?.forgotten)),
    family('cidsync_forget_last_relinked_publishes', 'gauge', 'Kept publishes the last forget linked anew (their CIDs changed).', one(f?.relinked)),
    family('cidsync_prune_last_timestamp_seconds', 'gauge', 'When the last prune ran, not a dry run (CLI or daemon; Unix time).', seconds(p?.at)),
    family('cidsync_prune_last_deleted_objects', 'gauge', 'Objects the last prune deleted.', one(p?.objects)),
    family('cidsync_prune_last_deleted_bytes', 'gauge', 'Bytes of those objects.', one(p?.bytes)),
    family('cidsync_prune_last_refused_objects', 'gauge', 'Objects the service refused to delete in the last prune (0 for a clean run): they stay.', one(p === undefined ? undefined : p.refused?.objects ?? 0)),
    family('cidsync_retention_counted_timestamp_seconds', 'gauge', 'When the figures below were counted, by the last prune or dry run (Unix time).', seconds(plan?.at)),
    family('cidsync_retention_held_objects', 'gauge', 'Objects the account listed at that count (less what that prune deleted).', one(plan?.held.objects)),
    family('cidsync_retention_held_bytes', 'gauge', 'Bytes of those objects.', one(plan?.held.bytes)),
    family('cidsync_prune_would_free_objects', 'gauge', 'Objects a prune would have deleted at that count (0 right after a prune).', one(plan?.wouldFree.objects)),
    family('cidsync_prune_would_free_bytes', 'gauge', 'Bytes of those objects.', one(plan?.wouldFree.bytes)),
    family('cidsync_repack_waiting_bytes', 'gauge', 'Unused bytes in content packs a prune rewrote, at that count: the prune after the next publish deletes them.', one(plan?.repack?.waitingBytes)),
    family('cidsync_prune_within_margin_objects', 'gauge', 'Objects no kept publish needs, stored within prune_margin at that count: a later prune deletes them.', one(plan?.young))
  ]
}

/** The Prometheus text exposition (format 0.0.4) of a status document. */
export function renderMetrics (status: StatusDocument): string {
  const perFolder = (pick: (f: StatusDocument['folders'][number]) => number): Sample[] =>
    status.folders.map(f => ({ labels: { folder: f.name }, value: pick(f) }))
  return [
    family('cidsync_info', 'gauge', 'Build and device of this daemon.', [{ labels: { version: status.version, device: status.device.id }, value: 1 }]),
    family('cidsync_uptime_seconds', 'gauge', 'Seconds since the daemon started.', [{ value: status.uptimeSeconds }]),
    family('cidsync_watcher_state', 'gauge', 'The watcher state: 1 for the current one.', WATCHER_STATES.map(s => ({ labels: { state: s }, value: status.watcher.state === s ? 1 : 0 }))),
    family('cidsync_index_current', 'gauge', '1 once the startup scan is done and every change is indexed.', [{ value: status.watcher.currentAt === null ? 0 : 1 }]),
    family('cidsync_folder_files', 'gauge', 'Files indexed in a folder.', perFolder(f => f.files)),
    family('cidsync_folder_bytes', 'gauge', 'Bytes of the files indexed in a folder.', perFolder(f => f.bytes)),
    family('cidsync_folder_pending_files', 'gauge', 'Files waiting to be looked at or hashed.', perFolder(f => f.scan.toHash)),
    family('cidsync_folder_scanned_files_total', 'counter', 'Files seen by the startup scan.', perFolder(f => f.scan.scanned)),
    family('cidsync_hashed_files_total', 'counter', 'Files hashed since start.', perFolder(f => f.scan.hashed)),
    family('cidsync_hashed_bytes_total', 'counter', 'Bytes hashed since start.', perFolder(f => f.scan.hashedBytes)),
    family('cidsync_skipped_files', 'gauge', 'Files that could not be read.', perFolder(f => f.skipped)),
    family('cidsync_folder_up', 'gauge', '0 when a folder is in error (missing, out of watches).', perFolder(f => f.error === null ? 1 : 0)),
    family('cidsync_index_rows_written_total', 'counter', 'Index rows written since start.', [{ value: status.index.rowsWritten }]),
    family('cidsync_index_write_errors_total', 'counter', 'Index write batches that failed.', [{ value: status.index.writeErrors }]),
    family('cidsync_index_write_retrying', 'gauge', '1 while index writes fail and are retried (see index.lastError in status).', [{ value: status.index.writeState === 'ok' ? 0 : 1 }]),
    family('cidsync_index_pending_writes', 'gauge', 'Index changes gathered and not yet committed.', [{ value: status.index.pendingWrites }]),
    family('cidsync_index_drift_repaired_total', 'counter', 'Differences between the index and the folders found and repaired by the drift check.', [{ value: status.drift?.totalRepaired ?? 0 }]),
    family('cidsync_index_drift_checks_total', 'counter', 'Drift checks run.', [{ value: status.drift?.runs ?? 0 }]),
    family('cidsync_resident_memory_bytes', 'gauge', 'Resident set size of the daemon.', [{ value: status.memory.rssBytes }]),
    family('cidsync_publish_runs_total', 'counter', 'Publishes attempted.', [{ value: status.publish?.runs ?? 0 }]),
    family('cidsync_publish_failures_total', 'counter', 'Publishes that failed.', [{ value: status.publish?.failures ?? 0 }]),
    family('cidsync_publish_blocked', 'gauge', '1 while a refused or expired credential stops publishing.', [{ value: status.publish?.blocked === null || status.publish === null ? 0 : 1 }]),
    family('cidsync_last_publish_timestamp_seconds', 'gauge', 'When the last snapshot was published.', [{ value: status.publish?.last?.at == null ? 0 : Date.parse(status.publish.last.at) / 1000 }]),
    family('cidsync_remote_files', 'gauge', 'Uploads in the account, as last reconciled.', [{ value: status.reconcile?.remoteFiles ?? 0 }]),
    family('cidsync_deals_pending', 'gauge', 'Deals this device asked for and not yet made.', [{ value: status.reconcile?.deals.pending ?? 0 }]),
    family('cidsync_deals_overdue', 'gauge', 'Pending deals older than two days.', [{ value: status.reconcile?.deals.overdue ?? 0 }]),
    family('cidsync_session_token_expiry_timestamp_seconds', 'gauge', 'When the session token expires (0: unknown).', [{ value: status.auth.sessionToken.expiresAt === null ? 0 : Date.parse(status.auth.sessionToken.expiresAt) / 1000 }]),
    histogram('cidsync_publish_duration_seconds', 'Time to publish a snapshot.', status.publish?.durationsSeconds),
    histogram('cidsync_reconcile_duration_seconds', 'Time to reconcile the account.', status.reconcile?.durationsSeconds),
    family('cidsync_restores_total', 'counter', 'Restores into this state dir (the last 100 are kept).', [{ value: status.publish?.restores.count ?? 0 }]),
    family('cidsync_restorable', 'gauge', '1 when the last restore drill restored what the pointer names, 0 when it failed; absent before the first drill.', status.restorable === null ? [] : [{ value: status.restorable.ok ? 1 : 0 }]),
    family('cidsync_verify_last_success_timestamp_seconds', 'gauge', 'When a restore drill last succeeded (Unix time); absent before one did.', status.restorable?.lastSuccessAt == null ? [] : [{ value: Date.parse(status.restorable.lastSuccessAt) / 1000 }]),
    family('cidsync_state_recoveries_total', 'counter', 'State files found damaged or lost at start and recovered (see stateFiles in /status).', [{ value: status.stateFiles.recovered.length }]),
    family('cidsync_leftover_files_removed_total', 'counter', 'Temp files of killed publishes and restores removed at start.', [{ value: status.stateFiles.leftoversRemoved.files }]),
    family('cidsync_sync_state_up', 'gauge', '0 while sync.sqlite cannot be read.', [{ value: status.stateFiles.syncStateError === null ? 1 : 0 }]),
    histogram('cidsync_restore_duration_seconds', 'Time to restore the index, fetch included.', status.publish?.restores.durationsSeconds),
    ...contentFamilies(status),
    ...mirrorFamilies(status),
    ...retentionFamilies(status)
  ].filter(text => text !== '').join('\n') + '\n'
}
