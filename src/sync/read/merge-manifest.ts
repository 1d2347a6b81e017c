import type { Logger } from 'pino'
import type { Index, IncomingDevice, RecordedChain } from '../../index/index.js'
import type { ObjectHome } from '../../store/index.js'
import { deviceChainSchema, type DeviceChain, type Manifest, type SegmentRef } from '../../snapshot/index.js'
import { SequenceImplausibleError } from '../../errors.js'
import { fetchSegments, removeFetched, type FetchInit } from './segment-fetch.js'

/** The segment list recorded for each device, parsed (a list that does not parse is as good as none). */
export function parseChains (recorded: readonly RecordedChain[]): Map<string, DeviceChain['segments']> {
  const chains = new Map<string, DeviceChain['segments']>()
  for (const chain of recorded) {
    try {
      const segments = deviceChainSchema.shape.segments.parse(JSON.parse(chain.segments))
      if (segments.at(-1)?.to === chain.toSeq) chains.set(chain.deviceId, segments)
    } catch {
      // Forgotten: the device gets a base, which is always right.
    }
  }
  return chains
}

/** What a device needs from a manifest: every segment (its rows replaced whole), or only the deltas past the list it holds. */
export function neededSegments (theirs: DeviceChain, mine: readonly SegmentRef[] | undefined, mySeq: number): { replace: boolean, segments: SegmentRef[] } {
  const isPrefix = mine !== undefined && mine.length <= theirs.segments.length && mine.at(-1)?.to === mySeq &&
    mine.every((segment, i) => theirs.segments[i]?.cid === segment.cid)
  return isPrefix ? { replace: false, segments: theirs.segments.slice(mine.length) } : { replace: true, segments: [...theirs.segments] }
}

/** A device's chain as the index applies it: its segment files, whether they replace its rows. */
export function incoming (theirs: DeviceChain, replace: boolean, files: string[]): IncomingDevice {
  const to = theirs.segments.at(-1)?.to ?? theirs.lastSeq
  return {
    deviceId: theirs.deviceId, hostname: theirs.hostname, firstSeen: theirs.firstSeen, lastSeq: theirs.lastSeq, replace, files,
    chain: { deviceId: theirs.deviceId, toSeq: to, segments: JSON.stringify(theirs.segments) }
  }
}

/**
 * The most another device's sequence may grow past what this index knows of it in one merge (its
 * first sighting included). A sequence counts row changes: four billion between two merges is
 * beyond any real device, while a forged one at 2^48 would stop the device for good.
 */
export const MAX_SEQUENCE_GROWTH = 2 ** 32

/** A device's list the merge would not take, and why. */
export interface RefusedChain { readonly deviceId: string, readonly lastSeq: number, readonly known: number, readonly error: SequenceImplausibleError }

export interface MergeLimits {
  /** The furthest sequence of its own rows this device put behind the pointer (sync.sqlite), if known. */
  readonly ownPublished?: number
}

/**
 * Whether a manifest's sequence for a device is plausible. This device's own: never past what it
 * wrote (its index, or what it published); unknown (a state dir older than the record), within
 * {@link MAX_SEQUENCE_GROWTH} of its index. Another's: within that growth of what this index knows.
 */
function implausible (theirs: DeviceChain, known: number, own: boolean, limits: MergeLimits, name: string): RefusedChain | undefined {
  const most = own && limits.ownPublished !== undefined ? Math.max(known, limits.ownPublished) : known + MAX_SEQUENCE_GROWTH
  if (theirs.lastSeq <= most) return undefined
  const why = own
    ? `names this device (${theirs.deviceId}) at sequence ${theirs.lastSeq}, past the ${most} it ever wrote`
    : `names device ${theirs.deviceId} at sequence ${theirs.lastSeq}, ${theirs.lastSeq - known} past the ${known} this index knows (more than ${MAX_SEQUENCE_GROWTH} changes at once)`
  return {
    deviceId: theirs.deviceId,
    lastSeq: theirs.lastSeq,
    known,
    error: new SequenceImplausibleError(`manifest ${name} ${why}: a forged publish by a holder of the key; that device's list is refused and the rest merged. ` +
      'Publishing goes on, and this device\'s next publish lists what it holds; if this repeats, the key has leaked: make a new one and a new namespace')
  }
}

/** What a merge works with: this device's index and id, the log, and the home the segments come from. */
export interface MergeManifestComponents {
  readonly index: Index
  readonly logger: Logger
  readonly deviceId: string
  readonly home: ObjectHome
}

/**
 * Takes other devices' rows from a manifest (docs/snapshot-format.md, "Merge"): only the segments
 * this index lacks are fetched; each device's rows, sequence and list change in one transaction.
 * This device's rows never come from elsewhere; a manifest that knows it further along than its
 * own index does makes it count on from there (and write a base next).
 */
export async function mergeManifest (components: MergeManifestComponents, manifest: Manifest, init: FetchInit & { readonly name?: string }, limits: MergeLimits = {}): Promise<{ devicesTaken: string[], segmentsFetched: number, refused: RefusedChain[] }> {
  const { index, deviceId: self } = components
  const name = init.name ?? 'at the pointer'
  const mine = parseChains(index.segments.chains())
  const seqs = new Map(index.segments.devices().map(d => [d.deviceId, d.lastSeq]))
  const plans: Array<{ theirs: DeviceChain, replace: boolean, segments: SegmentRef[] }> = []
  const refused: RefusedChain[] = []
  for (const theirs of manifest.devices) {
    const known = seqs.get(theirs.deviceId) ?? 0
    if (theirs.lastSeq <= known) continue
    const refusal = implausible(theirs, known, theirs.deviceId === self, limits, name)
    if (refusal !== undefined) {
      refused.push(refusal)
      continue
    }
    if (theirs.deviceId === self) continue
    plans.push({ theirs, ...neededSegments(theirs, mine.get(theirs.deviceId), known) })
  }
  const wanted = plans.flatMap(p => p.segments.map(segment => ({ deviceId: p.theirs.deviceId, segment })))
  const databases = await fetchSegments(components.home, wanted, init)
  try {
    index.segments.applyDevices(plans.map(p => incoming(p.theirs, p.replace, p.segments.map(s => databases.get(s.cid) as string))))
  } finally {
    await removeFetched(databases)
  }
  const ownThere = refused.some(r => r.deviceId === self) ? undefined : manifest.devices.find(d => d.deviceId === self)
  const ownHere = mine.get(self)
  const sameList = ownHere !== undefined && ownThere !== undefined && JSON.stringify(ownHere) === JSON.stringify(ownThere.segments)
  if (ownThere !== undefined && !sameList && index.segments.catchUpSelf(self, ownThere.lastSeq)) {
    components.logger.warn({ seenElsewhere: ownThere.lastSeq }, 'others hold this device\'s rows at a later sequence than its index: counting on from there; the next publish writes a base of its rows')
  }
  return { devicesTaken: plans.map(p => p.theirs.deviceId), segmentsFetched: wanted.length, refused }
}
