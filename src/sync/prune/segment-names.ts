import { join } from 'node:path'
import type { Manifest, SegmentRef } from '../../snapshot/index.js'
import { fetchSegments, fetchV1Snapshot, isGone, removeDatabase, removeFetched, type FetchInit } from '../read/index.js'
import type { Repository } from '../repository.js'
import type { BaseFile } from './object-sets.js'

/** Segments fetched and opened at a time: the disk holds at most this many, and the bases settled last. */
const AT_ONCE = 8
/** Bases settled from their files, held on disk until the end: those of the highest sequences. Others are taken as the deltas are. */
const SETTLED_BASES = 8

/** Where a prune's reading hands what each index database names. */
export interface NameSink {
  /**
   * Takes what one index database (a segment, or a `/1` snapshot when `whole`) names into a
   * prune's working sets: its rows, and its content records' objects. Called with each fetched
   * file in turn.
   */
  readonly take: (path: string, whole: boolean) => void
  /** Called once, after every other file was taken, with the bases left, still on disk. */
  readonly settle: (bases: readonly BaseFile[]) => void
}

/** What a prune reads: the pointer's chain, and the chains a forget replaced within the margin. */
export interface NamedChains {
  readonly kept: readonly Manifest[]
  /** Replaced chains held whole for their readers: a segment an earlier prune deleted is gone, and holds nothing. */
  readonly held: readonly Manifest[]
}

type Wanted = Array<{ deviceId: string, segment: SegmentRef }>

/** Each segment of the manifests once, leaving out those in `seen` (which it adds to). */
function segmentsOf (manifests: readonly Manifest[], seen: Set<string>): Wanted {
  const wanted: Wanted = []
  for (const manifest of manifests) {
    for (const device of manifest.devices) {
      for (const segment of device.segments) {
        if (seen.has(segment.cid)) continue
        seen.add(segment.cid)
        wanted.push({ deviceId: device.deviceId, segment })
      }
    }
  }
  return wanted
}

/**
 * Hands `take` each segment of the chains, a few fetched (verified, opened, checked) at a time and
 * removed after; and each `/1` snapshot. The newest bases come last to `settle`: most of their rows
 * are the only version of their path, settled from the file without a copy. A segment of the kept
 * chain that cannot be used fails the read. One only a held chain names, which a prune with a
 * shorter margin deleted already, is skipped: there is nothing left of it to keep. Answers the
 * segments read.
 */
export async function readNames (repository: Repository, chains: NamedChains, v1: readonly string[], fetch: FetchInit, sink: NameSink): Promise<number> {
  const seen = new Set<string>()
  const kept = segmentsOf(chains.kept, seen)
  const held = segmentsOf(chains.held, seen)
  // The bases of the highest sequences are settled; any past those are taken, not held on disk until the end.
  const newest = new Set([...kept, ...held].filter(w => w.segment.kind === 'base').sort((a, b) => b.segment.to - a.segment.to).slice(0, SETTLED_BASES).map(w => w.segment.cid))
  const last = (w: Wanted[number]): boolean => newest.has(w.segment.cid)
  const settled = new Map<string, BaseFile>()
  const read = async (wanted: Wanted, keep: boolean): Promise<void> => {
    const databases = await fetchSegments(repository.home, wanted, fetch)
    if (keep) {
      for (const { deviceId, segment } of wanted) {
        const path = databases.get(segment.cid)
        if (path !== undefined) settled.set(segment.cid, { path, device: deviceId, to: segment.to })
      }
      return
    }
    try {
      for (const path of databases.values()) sink.take(path, false)
    } finally {
      await removeFetched(databases)
    }
  }
  let gone = 0
  // One at a time: a fetch of several names only the first that failed.
  const readHeld = async (wanted: Wanted, keep: boolean): Promise<void> => {
    for (const one of wanted) {
      try {
        await read([one], keep)
      } catch (err) {
        if (!isGone(err)) throw err
        gone++
      }
    }
  }
  try {
    const now = kept.filter(w => !last(w))
    for (let i = 0; i < now.length; i += AT_ONCE) await read(now.slice(i, i + AT_ONCE), false)
    await readHeld(held.filter(w => !last(w)), false)
    for (const cid of v1) {
      const path = join(fetch.dir, `${fetch.label}-${process.pid}-v1.sqlite`)
      try {
        await fetchV1Snapshot(repository.home, cid, path, fetch)
        sink.take(path, true)
      } finally {
        await removeDatabase(path)
      }
    }
    await read(kept.filter(last), true)
    await readHeld(held.filter(last), true)
    sink.settle([...settled.values()])
  } finally {
    await removeFetched(new Map([...settled].map(([cid, base]) => [cid, base.path])))
  }
  return kept.length + held.length - gone + v1.length
}
