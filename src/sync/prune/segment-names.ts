import { join } from 'node:path'
import type { Manifest, SegmentRef } from '../../snapshot/index.js'
import { fetchSegments, fetchV1Snapshot, removeDatabase, removeFetched, type FetchInit } from '../read/index.js'
import type { Repository } from '../repository.js'

/** Segments fetched and opened at a time: the disk holds at most this many. */
const AT_ONCE = 8

/**
 * Takes what one index database (a segment, or a `/1` snapshot when `whole`) names into a prune's
 * working sets: its rows, and its content records' objects. Called with each fetched file in turn.
 */
export type TakeNames = (path: string, whole: boolean) => void

/**
 * Hands `take` each segment of the manifests, a few fetched (verified, opened, checked) at a time
 * and removed after; and each `/1` snapshot.
 */
export async function readNames (repository: Repository, manifests: readonly Manifest[], v1: readonly string[], fetch: FetchInit, take: TakeNames): Promise<number> {
  const seen = new Set<string>()
  const wanted: Array<{ deviceId: string, segment: SegmentRef }> = []
  for (const manifest of manifests) {
    for (const device of manifest.devices) {
      for (const segment of device.segments) {
        if (seen.has(segment.cid)) continue
        seen.add(segment.cid)
        wanted.push({ deviceId: device.deviceId, segment })
      }
    }
  }
  for (let i = 0; i < wanted.length; i += AT_ONCE) {
    const databases = await fetchSegments(repository.home, wanted.slice(i, i + AT_ONCE), fetch)
    try {
      for (const path of databases.values()) take(path, false)
    } finally {
      await removeFetched(databases)
    }
  }
  for (const cid of v1) {
    const path = join(fetch.dir, `${fetch.label}-${process.pid}-v1.sqlite`)
    try {
      await fetchV1Snapshot(repository.home, cid, path, fetch)
      take(path, true)
    } finally {
      await removeDatabase(path)
    }
  }
  return wanted.length + v1.length
}
