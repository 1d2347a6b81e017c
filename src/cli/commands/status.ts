import type { Command } from 'commander'
import { loadConfig } from '../../config/index.js'
import type { StatusDocument } from '../../daemon/index.js'
import { countOf, formatBytes, formatDuration, formatTable } from '../format.js'
import { action } from '../run.js'

function publishLines (s: StatusDocument): string[] {
  const lines: string[] = []
  if (s.publish !== null) {
    const last = s.publish.last === null ? 'nothing published yet' : `last snapshot ${s.publish.last.cid} at ${s.publish.last.at ?? '?'} (${countOf(s.publish.last.entries, 'entry', 'entries')})`
    lines.push(`publish: ${last}${s.publish.pendingAt === null ? '' : `; next after changes at ${s.publish.pendingAt}`}`)
    lines.push(`pointer: ${s.publish.pointer.inSync ? `in sync (${s.publish.pointer.cid ?? ''})` : `not in sync: ${s.publish.pointer.why ?? ''}`}`)
    if (s.publish.blocked !== null) lines.push(`publish: stopped: ${s.publish.blocked}`)
    else if (s.publish.lastError !== null) lines.push(`publish: last attempt failed at ${s.publish.lastError.at}: ${s.publish.lastError.message}`)
  }
  if (s.reconcile !== null) {
    lines.push(`account: ${s.reconcile.remoteFiles.toLocaleString('en-US')} uploads (${s.reconcile.gone} gone) · deals pending ${s.reconcile.deals.pending}, overdue ${s.reconcile.deals.overdue}, made ${s.reconcile.deals.made}` +
      (s.reconcile.lastRun === null ? ' · not reconciled yet' : ` · reconciled ${s.reconcile.lastRun}`))
  }
  if (s.auth.sessionToken.warning !== null) lines.push(`auth: ${s.auth.sessionToken.warning}`)
  return lines
}

/** The readable summary of a status document. */
export function formatStatus (s: StatusDocument): string {
  const lines = [
    `cidsync ${s.version} · device ${s.device.id.slice(0, 8)} (${s.device.hostname}) · up ${formatDuration(s.uptimeSeconds)} · pid ${s.pid}`,
    `namespace ${s.namespace} · network ${s.network} · service ${s.service.mode} · profile ${s.cidProfile}`,
    `watcher ${s.watcher.state}` + (s.watcher.currentAt !== null ? ` · index current since ${s.watcher.currentAt}` : ' · scanning, index not yet current'),
    `index ${countOf(s.index.files, 'file', 'files')}, ${formatBytes(s.index.bytes)} · ${s.stateDir}`,
    s.service.error !== null ? `service: cannot be reached: ${s.service.error}` : `service: ${s.service.endpoint ?? 'reached once the index is current'}`,
    ...publishLines(s),
    ''
  ]
  if (s.folders.length === 0) {
    lines.push('no folders configured: add [[folders]] to the config')
  } else {
    lines.push(formatTable(['FOLDER', 'STATE', 'FILES', 'SIZE', 'TO HASH', 'SKIPPED', 'PATH'], s.folders.map(f => [
      f.name, f.state, f.files.toLocaleString('en-US'), formatBytes(f.bytes), String(f.scan.toHash), String(f.skipped), f.path
    ]), new Set([2, 3, 4, 5])).trimEnd())
    for (const f of s.folders) if (f.error !== null) lines.push(`  ${f.name}: ${f.error}`)
  }
  if (s.lastErrors.length > 0) {
    lines.push('', 'recent errors:')
    for (const e of s.lastErrors.slice(-5)) lines.push(`  ${e.at}  ${e.message}${e.code !== null ? ` [${e.code}]` : ''}`)
  }
  return lines.join('\n') + '\n'
}

export function registerStatus (program: Command): void {
  program.command('status')
    .description('what the running daemon is doing, from its status endpoint')
    .option('--config <path>', 'config file')
    .option('--json', 'print the raw status document')
    .action(action(async (options: { config?: string, json?: boolean }) => {
      const config = loadConfig({ configPath: options.config })
      const { getFromDaemon } = await import('../status-client.js')
      const body = await getFromDaemon(config, '/status')
      process.stdout.write(options.json === true ? body : formatStatus(JSON.parse(body) as StatusDocument))
    }))
}
