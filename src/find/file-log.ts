import type { Index } from '../index/index.js'
import type { HistoryRows, VersionRow } from './history-rows.js'
import { fetchable, storedState, type ContentActivity, type StoredState } from './stored-state.js'

export interface FileVersion {
  readonly deviceId: string
  readonly hostname: string
  /** When the device wrote this version of its row. */
  readonly at: number
  readonly seq: number
  readonly size: number
  readonly cid: string | null
  readonly mtimeMs: number
  readonly deleted: boolean
  readonly stored: StoredState
  /** Whether this version's content can be fetched back (deleted versions have none). */
  readonly fetchable: boolean
  /** The version the index holds now (else only a segment of the history does). */
  readonly current: boolean
}

/** `folder/path` split at its first `/` (folder names hold none). Undefined when there is no `/`. */
export function splitPath (text: string): { folder: string, path: string } | undefined {
  const slash = text.indexOf('/')
  if (slash <= 0 || slash === text.length - 1) return undefined
  return { folder: text.slice(0, slash), path: text.slice(slash + 1) }
}

/** Each version's next one of the same device, by sequence (`device\nseq` → the next's sequence). */
function nextSequences (rows: readonly VersionRow[]): Map<string, number> {
  const next = new Map<string, number>()
  const sorted = [...rows].sort((a, b) => (a.device_id < b.device_id ? -1 : a.device_id > b.device_id ? 1 : a.seq - b.seq))
  for (let i = 0; i + 1 < sorted.length; i++) {
    const a = sorted[i] as VersionRow
    const b = sorted[i + 1] as VersionRow
    if (a.device_id === b.device_id) next.set(`${a.device_id}\n${a.seq}`, b.seq)
  }
  return next
}

/**
 * One file's timeline, oldest first: every version the history's kept segments hold of
 * `folder/path` on any device, and the rows the index holds now, each once (by device and sequence).
 * Once `chain` was walked (see historyChainKey), an older version shows only while a publish of it holds it.
 * `activity`: this device's uploads and failures, for the stored state of its current row.
 */
export function fileLog (index: Index, history: HistoryRows | undefined, folder: string, path: string, activity?: ContentActivity, chain?: string): FileVersion[] {
  return fileTimeline(index, history, folder, path, activity, chain).versions
}

/**
 * {@link fileLog}, with how many older versions only publishes a forget dropped held (not shown),
 * and how many publishes the chain holds (undefined before it was walked).
 */
export function fileTimeline (index: Index, history: HistoryRows | undefined, folder: string, path: string, activity?: ContentActivity, chain?: string): { versions: FileVersion[], forgotten: number, publishes?: number } {
  const devices = index.entries.devices()
  const hostnames = new Map(devices.map(d => [d.id, d.hostname ?? '']))
  const byKey = new Map<string, { row: VersionRow, current: boolean }>()
  for (const row of history?.versionsOf(folder, path) ?? []) byKey.set(`${row.device_id}\n${row.seq}`, { row, current: false })
  for (const device of devices) {
    const entry = index.entries.get(device.id, folder, path)
    if (entry === undefined) continue
    byKey.set(`${entry.deviceId}\n${entry.seq}`, {
      current: true,
      row: { device_id: entry.deviceId, seq: entry.seq, size: entry.size, mtime_ms: entry.mtimeMs, cid: entry.cid, deleted: entry.deleted ? 1 : 0, updated_at: entry.updatedAt }
    })
  }
  // Only what the chain last walked holds: a version only publishes a forget dropped is gone from the history.
  const kept = chain === undefined ? undefined : history?.keptChain(chain)
  const next = nextSequences([...byKey.values()].map(v => v.row))
  const held = ({ row, current }: { row: VersionRow, current: boolean }): boolean => current || kept === undefined || kept.held(row.device_id, row.seq, next.get(`${row.device_id}\n${row.seq}`))
  const shown = [...byKey.values()].filter(held)
  // A device no publish of the chain holds rows of is another history's (another namespace): not forgotten here.
  // One newer than every publish of the chain (a mirror behind, a pointer set back) was not forgotten either.
  const forgotten = [...byKey.values()].filter(v => !held(v) && kept?.reaches(v.row.device_id, v.row.seq) === true).length
  const versions = shown
    .sort((a, b) => a.row.updated_at - b.row.updated_at || a.row.seq - b.row.seq || (a.row.device_id < b.row.device_id ? -1 : 1))
    .map(({ row, current }) => {
      // Queued, uploading or failed are about the row as it is now, not an older version's content.
      const stored: StoredState = storedState(index, row.cid, current ? { deviceId: row.device_id, folder, path, size: row.size } : undefined, current ? activity : undefined)
      return {
        deviceId: row.device_id, hostname: hostnames.get(row.device_id) ?? '', at: row.updated_at, seq: row.seq, size: row.size, cid: row.cid,
        mtimeMs: row.mtime_ms, deleted: row.deleted === 1, stored, fetchable: row.deleted === 0 && row.cid !== null && fetchable(stored), current
      }
    })
  return { versions, forgotten, ...(kept === undefined ? {} : { publishes: kept.publishes }) }
}
