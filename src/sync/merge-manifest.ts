import { rename } from 'node:fs/promises'
import type { Logger } from 'pino'
import { openIndex, type Index, type IncomingDevice } from '../index/index.js'
import type { ServiceClients } from '../remote/index.js'
import type { DeviceChain, Manifest, SegmentRef } from '../snapshot/index.js'
import { parseChains } from './publication.js'
import { fetchSegments, removeFetched, type FetchInit } from './segment-fetch.js'

/** What a device needs from a manifest: every segment (its rows replaced whole), or only the deltas past the list it holds. */
export function neededSegments (theirs: DeviceChain, mine: readonly SegmentRef[] | undefined, mySeq: number): { replace: boolean, segments: SegmentRef[] } {
  const isPrefix = mine !== undefined && mine.length <= theirs.segments.length && mine.at(-1)?.to === mySeq &&
    mine.every((segment, i) => theirs.segments[i]?.cid === segment.cid)
  return isPrefix ? { replace: false, segments: theirs.segments.slice(mine.length) } : { replace: true, segments: [...theirs.segments] }
}

function incoming (theirs: DeviceChain, replace: boolean, files: string[]): IncomingDevice {
  const to = theirs.segments.at(-1)?.to ?? theirs.lastSeq
  return {
    deviceId: theirs.deviceId, hostname: theirs.hostname, firstSeen: theirs.firstSeen, lastSeq: theirs.lastSeq, replace, files,
    chain: { deviceId: theirs.deviceId, toSeq: to, segments: JSON.stringify(theirs.segments) }
  }
}

export interface MergeManifestComponents {
  readonly index: Index
  readonly clients: ServiceClients
  readonly logger: Logger
  readonly deviceId: string
}

/**
 * Takes other devices' rows from a manifest (docs/snapshot-format.md, "Merge"): only the segments
 * this index lacks are fetched; each device's rows, sequence and list change in one transaction.
 * This device's rows never come from elsewhere; a manifest that knows it further along than its
 * own index does makes it count on from there (and write a base next).
 */
export async function mergeManifest (components: MergeManifestComponents, manifest: Manifest, init: FetchInit): Promise<{ devicesTaken: string[], segmentsFetched: number }> {
  const { index, deviceId: self } = components
  const mine = parseChains(index.segments.chains())
  const seqs = new Map(index.segments.devices().map(d => [d.deviceId, d.lastSeq]))
  const plans: Array<{ theirs: DeviceChain, replace: boolean, segments: SegmentRef[] }> = []
  for (const theirs of manifest.devices) {
    if (theirs.deviceId === self || theirs.lastSeq <= (seqs.get(theirs.deviceId) ?? 0)) continue
    plans.push({ theirs, ...neededSegments(theirs, mine.get(theirs.deviceId), seqs.get(theirs.deviceId) ?? 0) })
  }
  const wanted = plans.flatMap(p => p.segments.map(segment => ({ deviceId: p.theirs.deviceId, segment })))
  const databases = await fetchSegments(components.clients, wanted, init)
  try {
    index.segments.applyDevices(plans.map(p => incoming(p.theirs, p.replace, p.segments.map(s => databases.get(s.cid) as string))))
  } finally {
    await removeFetched(databases)
  }
  const ownThere = manifest.devices.find(d => d.deviceId === self)
  const ownHere = mine.get(self)
  const sameList = ownHere !== undefined && ownThere !== undefined && JSON.stringify(ownHere) === JSON.stringify(ownThere.segments)
  if (ownThere !== undefined && !sameList && index.segments.catchUpSelf(self, ownThere.lastSeq)) {
    components.logger.warn({ seenElsewhere: ownThere.lastSeq }, 'others hold this device\'s rows at a later sequence than its index: counting on from there; the next publish writes a base of its rows')
  }
  return { devicesTaken: plans.map(p => p.theirs.deviceId), segmentsFetched: wanted.length }
}

/**
 * Builds a whole index from a manifest into `destination` (a new file): every segment fetched and
 * checked, the device with the largest base taken as the file itself (no row copied twice), the
 * other devices and then every delta applied, and every list recorded.
 */
export async function buildIndex (clients: ServiceClients, manifest: Manifest, destination: string, init: FetchInit): Promise<void> {
  const wanted = manifest.devices.flatMap(d => d.segments.map(segment => ({ deviceId: d.deviceId, segment })))
  const databases = await fetchSegments(clients, wanted, init)
  try {
    const largest = [...manifest.devices].sort((a, b) => (b.segments[0]?.entries ?? 0) - (a.segments[0]?.entries ?? 0))[0]
    if (largest !== undefined) await rename(databases.get(largest.segments[0]?.cid ?? '') as string, destination)
    const index = openIndex(destination, { check: false })
    try {
      index.segments.applyDevices(manifest.devices.map(d => d === largest
        ? incoming(d, false, d.segments.slice(1).map(s => databases.get(s.cid) as string))
        : incoming(d, true, d.segments.map(s => databases.get(s.cid) as string))))
    } finally {
      index.close()
    }
  } finally {
    await removeFetched(databases)
  }
}
