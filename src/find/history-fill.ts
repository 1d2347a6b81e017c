import { fetchSegments, removeFetched, walkHistory, type PastOptions, type Repository } from '../sync/index.js'
import type { SegmentRef } from '../snapshot/index.js'
import type { HistoryRows, PublishSeen } from './history-rows.js'

/** Segments fetched at once: bounds the disk a fill holds in fetched databases. */
const BATCH = 8

export interface HistoryFill {
  /** Publishes walked that were not kept before. */
  readonly publishes: number
  readonly segmentsFetched: number
  /** `/1` snapshots met: they hold no segments, so no versions are read from them. */
  readonly v1Skipped: number
  /**
   * The head walked before, when `start` is an older publish of its chain: the pointer was set
   * back (a forget always links the kept publishes anew). The rows stay shown as of that head.
   */
  readonly setBackFrom?: string
}

/**
 * Keeps the rows of every segment of the history from `start` that is not kept yet: the chain is
 * walked newest first until a publish already taken (everything before it was taken with it),
 * the segments they name are fetched (verified, opened, checked) a few at a time, their rows kept,
 * and then the publishes recorded, with `start` as the head of `chain` (see historyChainKey).
 * Killed half way, the segments taken stay taken.
 */
export async function fillHistory (repository: Repository, rows: HistoryRows, start: string, chain: string, options: PastOptions = {}): Promise<HistoryFill> {
  const before = rows.head(chain)
  // Only a publish already walked can be an older one of that chain: a new head costs no walk here.
  if (before !== undefined && before !== start && rows.hasPublish(start) && rows.chainFrom(before)?.includes(start) === true) {
    return { publishes: 0, segmentsFetched: 0, v1Skipped: 0, setBackFrom: before }
  }
  const clients = repository.home
  const init = repository.readContext('log', options)
  const cache = repository.manifestCache
  const publishes: PublishSeen[] = []
  const wanted = new Map<string, { deviceId: string, segment: SegmentRef }>()
  for await (const { entry, manifest } of walkHistory(clients, start, cache, init)) {
    if (rows.hasPublish(entry.cid)) break
    publishes.push({ cid: entry.cid, at: entry.at, device: entry.device, readable: manifest !== undefined, previous: entry.previous, seqs: (manifest?.devices ?? []).map(d => [d.deviceId, d.lastSeq] as const) })
    for (const device of manifest?.devices ?? []) {
      for (const segment of device.segments) {
        if (!wanted.has(segment.cid) && !rows.hasSegment(segment.cid)) wanted.set(segment.cid, { deviceId: device.deviceId, segment })
      }
    }
  }
  const all = [...wanted.values()]
  for (let i = 0; i < all.length; i += BATCH) {
    const batch = all.slice(i, i + BATCH)
    const databases = await fetchSegments(clients, batch, init)
    try {
      for (const { segment } of batch) rows.takeSegment(segment.cid, databases.get(segment.cid) as string)
    } finally {
      await removeFetched(databases)
    }
  }
  rows.notePublishes(publishes, start, chain)
  return { publishes: publishes.length, segmentsFetched: all.length, v1Skipped: publishes.filter(p => !p.readable).length }
}
