import { existsSync } from 'node:fs'
import type { Config } from '../config/index.js'
import { countOf, formatBytes, formatCount, formatTable } from './format.js'
import { timeWithAge } from './relative-time.js'
import { mirrorLines } from './mirror-lines.js'
import { recordLines } from './retention-lines.js'
import { safeText } from './safe-text.js'

/**
 * What the state dir says with no daemon running (as restic and Litestream show an offline
 * state): this device's index by folder, the last publish and restore drill, and the last forget
 * and prune. Read only; a state dir with no index yet says so.
 */
export async function offlineSummary (config: Config, why: string): Promise<string> {
  const lines = [`daemon: not running: ${why}`, 'what the state dir holds (as of the daemon\'s last run):']
  const { indexPath, openIndex, readDeviceId } = await import('../index/index.js')
  const path = indexPath(config.stateDir)
  const deviceId = readDeviceId(config.stateDir)
  if (!existsSync(path)) {
    lines.push(`index: none yet in ${config.stateDir} (\`cidsync daemon\` builds it, \`cidsync restore\` installs one)`)
  } else {
    const index = openIndex(path, { readonly: true })
    try {
      const totals = deviceId === undefined ? [] : index.entries.totals(deviceId)
      const files = totals.reduce((n, t) => n + t.files, 0)
      const bytes = totals.reduce((n, t) => n + t.bytes, 0)
      lines.push(`index ${countOf(files, 'file', 'files')}, ${formatBytes(bytes)} · ${config.stateDir}`)
      // A restored state dir holds other devices' rows and none of this one's yet: "0 files" alone reads as a failed restore.
      const others = index.entries.devices().filter(d => d.id !== deviceId).map(d => index.entries.liveCount(d.id)).filter(n => n > 0)
      const otherFiles = others.reduce((n, live) => n + live, 0)
      if (otherFiles > 0) lines.push(`  (this device's; the index also lists ${countOf(otherFiles, 'file', 'files')} of ${countOf(others.length, 'other device', 'other devices')}: \`cidsync ls --all-devices\`)`)
      if (totals.length > 0) {
        lines.push(formatTable(['FOLDER', 'FILES', 'SIZE'], totals.map(t => [t.folder, formatCount(t.files), formatBytes(t.bytes)]), new Set([1, 2])).trimEnd())
      }
    } finally {
      index.close()
    }
  }
  const { hasSyncState, SyncStore, restorableStatus, mirrorStatus } = await import('../sync/index.js')
  if (!hasSyncState(config.stateDir)) {
    lines.push('publish: nothing published from this state dir yet')
  } else {
    const store = new SyncStore(config.stateDir)
    try {
      const last = store.lastPublished()
      lines.push(last === undefined ? 'publish: nothing published from this state dir yet' : `publish: last snapshot ${last.cid} at ${last.at === null ? '?' : timeWithAge(last.at)}, ${countOf(last.entries, 'entry', 'entries')}`)
      const r = restorableStatus(store)
      lines.push(`restorable: ${r === null ? 'not checked yet (`cidsync verify`)' : r.ok ? `yes (drill at ${timeWithAge(r.checkedAt)})` : `NO (drill at ${timeWithAge(r.checkedAt)}): ${r.failed ?? '?'}`}`)
      const retention = store.retention
      lines.push(...recordLines({ lastForget: retention.lastForget(), lastPrune: retention.lastPrune(), plan: retention.prunePlan(), planDueAt: null, planError: null }).map(safeText))
      const failed = failedUploads(store.contentFailures())
      if (failed > 0) lines.push(`content: ${countOf(failed, 'file', 'files')} failed to upload at the daemon's last pass (\`cidsync ls\` lists them with why; the daemon tries them again)`)
      if (config.mirrors.length > 0) {
        // What sync.sqlite recorded; whether a copy fails now, and the mirror's pointer, only a running daemon knows.
        const mirrors = config.mirrors.map(m => mirrorStatus({ name: m.name, describe: `mirror ${m.name} at ${m.uploadUrl}`, maxLagSeconds: m.maxLagSeconds }, store.mirrorLog, undefined))
        lines.push('mirrors, as the state dir recorded them (not checked now: the daemon copies and checks them):', ...mirrorLines({ mirrors }).map(line => `  ${safeText(line)}`))
      }
    } finally {
      store.close()
    }
  }
  return lines.join('\n') + '\n'
}

/** How many failures the daemon's last pass left (JSON from sync.sqlite; anything else counts none). */
function failedUploads (json: string | undefined): number {
  try {
    const list = JSON.parse(json ?? '[]') as unknown
    return Array.isArray(list) ? list.length : 0
  } catch {
    return 0
  }
}
