import { existsSync } from 'node:fs'
import type { Config } from '../config/index.js'
import { mirrorLocation } from '../store/index.js'
import type { ForgetRecord, MirrorStatus, PrunePlanRecord, PruneRecord, RestorableStatus } from '../sync/index.js'
import { countOf, formatBytes, formatCount, formatTable } from './format.js'
import { timeWithAge } from './relative-time.js'
import { mirrorLines } from './mirror-lines.js'
import { recordLines } from './retention-lines.js'
import { safeText } from './safe-text.js'

/** What the state dir holds with no daemon running: `status --json` prints it as it is. */
export interface OfflineState {
  readonly daemon: { readonly running: false, readonly why: string }
  readonly stateDir: string
  /** This device's live files by folder; null with no index yet. */
  readonly index: { readonly files: number, readonly bytes: number, readonly otherDevices: { readonly devices: number, readonly files: number } } | null
  /** This device's live files in each folder, named as the daemon's document names its folders. */
  readonly folders: ReadonlyArray<{ readonly name: string, readonly files: number, readonly bytes: number }>
  readonly publish: { readonly last: { readonly cid: string, readonly at: string | null, readonly entries: number } | null }
  readonly restorable: RestorableStatus | null
  readonly retention: { readonly lastForget: ForgetRecord | null, readonly lastPrune: PruneRecord | null, readonly plan: PrunePlanRecord | null }
  /** Files the daemon's last pass failed to upload. */
  readonly contentFailed: number
  /** As sync.sqlite recorded them: only a running daemon checks them now. */
  readonly mirrors: readonly MirrorStatus[]
}

/**
 * Reads what the state dir says with no daemon running (as restic and Litestream show an offline
 * state): this device's index by folder, the last publish and restore drill, the last forget and
 * prune. Read only; a state dir with no index yet says so.
 */
export async function offlineState (config: Config, why: string): Promise<OfflineState> {
  const { indexPath, openIndex, readDeviceId } = await import('../index/index.js')
  const path = indexPath(config.stateDir)
  const deviceId = readDeviceId(config.stateDir)
  let index: OfflineState['index'] = null
  let byFolder: OfflineState['folders'] = []
  if (existsSync(path)) {
    const db = openIndex(path, { readonly: true })
    try {
      const folders = deviceId === undefined ? [] : db.entries.totals(deviceId)
      const others = db.entries.devices().filter(d => d.id !== deviceId).map(d => db.entries.liveCount(d.id)).filter(n => n > 0)
      index = {
        files: folders.reduce((n, t) => n + t.files, 0),
        bytes: folders.reduce((n, t) => n + t.bytes, 0),
        otherDevices: { devices: others.length, files: others.reduce((n, live) => n + live, 0) }
      }
      byFolder = folders.map(t => ({ name: t.folder, files: t.files, bytes: t.bytes }))
    } finally {
      db.close()
    }
  }
  const state: OfflineState = {
    daemon: { running: false, why },
    stateDir: config.stateDir,
    index,
    folders: byFolder,
    publish: { last: null },
    restorable: null,
    retention: { lastForget: null, lastPrune: null, plan: null },
    contentFailed: 0,
    mirrors: []
  }
  const { hasSyncState, SyncStore, restorableStatus, mirrorStatus } = await import('../sync/index.js')
  if (!hasSyncState(config.stateDir)) return state
  const store = new SyncStore(config.stateDir)
  try {
    const last = store.lastPublished()
    const retention = store.retention
    return {
      ...state,
      publish: { last: last === undefined ? null : { cid: last.cid, at: last.at, entries: last.entries } },
      restorable: restorableStatus(store),
      retention: { lastForget: retention.lastForget(), lastPrune: retention.lastPrune(), plan: retention.prunePlan() },
      contentFailed: failedUploads(store.contentFailures()),
      mirrors: config.mirrors.map(m => mirrorStatus({ name: m.name, describe: `mirror ${m.name} at ${mirrorLocation(m)}`, maxLagSeconds: m.maxLagSeconds }, store.mirrorLog, undefined))
    }
  } finally {
    store.close()
  }
}

/** {@link offlineState} as `status` shows it. */
export async function offlineSummary (config: Config, why: string): Promise<string> {
  const state = await offlineState(config, why)
  const lines = [`daemon: not running: ${why}`, 'what the state dir holds:']
  const { index } = state
  if (index === null) {
    lines.push(`index: none yet in ${config.stateDir} (\`cidsync daemon\` builds it, \`cidsync restore\` installs one)`)
  } else {
    lines.push(`index ${countOf(index.files, 'file', 'files')}, ${formatBytes(index.bytes)} · ${config.stateDir}`)
    // A restored state dir holds other devices' rows and none of this one's yet: "0 files" alone reads as a failed restore.
    if (index.otherDevices.files > 0) lines.push(`  (this device's; the index also lists ${countOf(index.otherDevices.files, 'entry', 'entries')} (files, links, directories) of ${countOf(index.otherDevices.devices, 'other device', 'other devices')}: \`cidsync ls --all-devices\`)`)
    if (state.folders.length > 0) {
      lines.push(formatTable(['FOLDER', 'FILES', 'SIZE'], state.folders.map(t => [t.name, formatCount(t.files), formatBytes(t.bytes)]), new Set([1, 2])).trimEnd())
    }
  }
  const last = state.publish.last
  lines.push(last === null ? 'publish: nothing published from this state dir yet' : `publish: last snapshot ${last.cid} at ${last.at === null ? '?' : timeWithAge(last.at)}, ${countOf(last.entries, 'entry', 'entries')}`)
  const r = state.restorable
  if (last !== null || r !== null) lines.push(`restorable: ${r === null ? 'not checked yet (`cidsync verify`)' : r.ok ? `yes (drill at ${timeWithAge(r.checkedAt)})` : `NO (drill at ${timeWithAge(r.checkedAt)}): ${r.failed ?? '?'}`}`)
  const { lastForget, lastPrune, plan } = state.retention
  lines.push(...recordLines({ lastForget, lastPrune, plan, planDueAt: null, planError: null }).map(safeText))
  if (state.contentFailed > 0) lines.push(`content: ${countOf(state.contentFailed, 'file', 'files')} failed to upload at the daemon's last pass (\`cidsync ls\` lists them with why; the daemon tries them again)`)
  if (state.mirrors.length > 0) {
    lines.push('mirrors, as the state dir recorded them (not checked now: the daemon copies and checks them):', ...mirrorLines({ mirrors: state.mirrors }).map(line => `  ${safeText(line)}`))
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
