import type { StatusDocument } from './status-document.js'

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

const WATCHER_STATES = ['starting', 'scanning', 'watching', 'degraded', 'stopped'] as const

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
    family('cidsync_resident_memory_bytes', 'gauge', 'Resident set size of the daemon.', [{ value: status.memory.rssBytes }])
  ].join('\n') + '\n'
}
