import { hostname } from 'node:os'
import { rmSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fileCid } from '../../content/index.js'
import { SnapshotFormatError } from '../../errors.js'
import type { DeviceState, Index, RecordedChain, SegmentRange } from '../../index/index.js'
import { sealManifest, sealSegment, type Manifest, type SegmentRef } from '../../snapshot/index.js'
import { parseChains, SNAPSHOT_PROFILE } from '../read/index.js'
import { publishNow, type Clock } from '../../util/clock.js'

/** When this device writes a new base of its own rows instead of another delta. */
export interface CompactionPolicy { readonly afterDeltas: number, readonly fraction: number }

/** What a publish does for one device: reuse its list as it is, or write one segment and end the list with it. */
export interface DevicePlan {
  readonly device: DeviceState
  readonly reuse: readonly SegmentRef[]
  readonly write: SegmentRange | undefined
}

/**
 * Objects a restore drill could not use: lists holding one are written afresh as a base, and with
 * `self` this device's list too (its rows differed from what a restore installs).
 */
export interface Avoid { readonly cids: ReadonlySet<string>, readonly self: boolean }
const NOTHING_TO_AVOID: Avoid = { cids: new Set(), self: false }

function compactionDue (segments: readonly SegmentRef[], policy: CompactionPolicy): boolean {
  const deltas = segments.slice(1)
  const deltaBytes = deltas.reduce((sum, s) => sum + s.bytes, 0)
  return deltas.length >= policy.afterDeltas || deltaBytes > policy.fraction * (segments[0]?.bytes ?? 0)
}

/**
 * Decides each device's segments (docs/snapshot-format.md, "Publish"): a list that ends at the
 * device's sequence is reused; this device's list that ends below it gets a delta unless
 * compaction is due; anything else (no list, rows from a `/1` snapshot, a rebuilt index) a base.
 */
export function planPublication (devices: readonly DeviceState[], chains: ReadonlyMap<string, readonly SegmentRef[]>, self: string, policy: CompactionPolicy, avoid: Avoid = NOTHING_TO_AVOID): DevicePlan[] {
  const plans: DevicePlan[] = []
  for (const device of devices) {
    if (device.lastSeq === 0) continue
    const recorded = chains.get(device.deviceId)
    // A list holding an object a drill could not use is never reused: a fresh base replaces it.
    const tainted = recorded?.some(s => avoid.cids.has(s.cid)) === true || (avoid.self && device.deviceId === self)
    const list = tainted ? undefined : recorded
    const end = list?.at(-1)?.to
    if (list !== undefined && end === device.lastSeq) {
      plans.push({ device, reuse: list, write: undefined })
    } else if (device.deviceId === self && list !== undefined && end !== undefined && end < device.lastSeq && !compactionDue(list, policy)) {
      plans.push({ device, reuse: list, write: { deviceId: device.deviceId, kind: 'delta', from: end, to: device.lastSeq } })
    } else {
      plans.push({ device, reuse: [], write: { deviceId: device.deviceId, kind: 'base', from: 0, to: device.lastSeq } })
    }
  }
  return plans
}

export interface PublicationInit {
  readonly index: Index
  readonly self: string
  /** The pointer's CID this publish is made on top of. */
  readonly previous: string | null
  /** The namespace and network the manifest is bound to (inside its sealed body); absent: unbound (tests of the older format). */
  readonly binding?: { readonly namespace: string, readonly network: string }
  /** Where its files go, and a name that keeps them apart from another publish's. */
  readonly dir: string
  readonly label: string
  readonly policy: CompactionPolicy
  /** What a failed drill found unusable: not reused. */
  readonly avoid?: Avoid
  /** The user's labels for this publish (`cidsync snapshot --keep`). */
  readonly marks?: readonly string[]
  readonly encryption: 'aes-256-gcm' | 'none'
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
  /** What the manifest's `createdAt` is read from; the system clock when absent. */
  readonly clock?: Clock
}

/** A file to upload and send for a deal. */
export interface PublishedFile { readonly path: string, readonly cid: string, readonly bytes: number }

export interface Publication {
  readonly manifest: Manifest
  readonly manifestFile: PublishedFile
  /** New segments, then the manifest: the order they are uploaded in. */
  readonly files: readonly PublishedFile[]
  /** Devices and sequences the manifest holds (nothing changed since: nothing to publish). */
  readonly marker: string
}

/**
 * Writes a publish's new segments and its manifest, sealed, with their CIDs. The plan and every
 * segment's rows are taken in one synchronous stretch, so they describe one instant of the index.
 */
export async function writePublication (init: PublicationInit): Promise<Publication> {
  const { index, dir, label } = init
  const devices = index.segments.devices()
  const plans = planPublication(devices, parseChains(index.segments.chains()), init.self, init.policy, init.avoid)
  const entries = index.segments.liveEntries()
  const marker = JSON.stringify(devices.map(d => [d.deviceId, d.lastSeq]))
  const databases: Array<{ plan: DevicePlan, range: SegmentRange, database: string, entries: number, records: number }> = []
  try {
    // From reading the devices to the last segment's rows: no await, so no write of this process
    // lands in between and every segment holds exactly its range (a row rewritten in a gap would
    // move past `to` and out of this publish).
    for (const plan of plans) {
      if (plan.write === undefined) continue
      const database = join(dir, `${label}-${plan.device.deviceId.slice(0, 12)}-${plan.write.to}.sqlite`)
      rmSync(database, { force: true })
      const written = index.segments.writeSegment(database, plan.write, plan.device)
      databases.push({ plan, range: plan.write, database, entries: written.entries, records: written.records })
    }
    const files: PublishedFile[] = []
    const added = new Map<string, SegmentRef>()
    for (const { plan, range, database, entries: rows, records } of databases) {
      const path = database.replace(/\.sqlite$/, '.seg')
      const sealed = await sealSegment({ database, path, range, entries: rows, records, encryption: init.encryption, stateDir: init.stateDir, passphrase: init.passphrase, signal: init.signal })
      const { cid } = await fileCid(path, SNAPSHOT_PROFILE, { signal: init.signal })
      files.push({ path, cid: cid.toString(), bytes: sealed.bytes })
      added.set(plan.device.deviceId, { cid: cid.toString(), kind: range.kind, from: range.from, to: range.to, entries: rows, bytes: sealed.bytes })
    }
    const manifest: Manifest = {
      version: 2,
      createdAt: publishNow(init.clock).toISOString(),
      device: init.self,
      hostname: hostname(),
      previous: init.previous,
      entries,
      devices: plans.map(({ device, reuse }) => {
        const extra = added.get(device.deviceId)
        return { deviceId: device.deviceId, hostname: device.hostname, firstSeen: device.firstSeen, lastSeq: device.lastSeq, segments: extra === undefined ? [...reuse] : [...reuse, extra] }
      }),
      added: files.map(f => f.cid),
      bytesAdded: files.reduce((sum, f) => sum + f.bytes, 0),
      ...(init.binding === undefined ? {} : { namespace: init.binding.namespace, network: init.binding.network }),
      ...((init.marks?.length ?? 0) > 0 ? { marks: [...(init.marks ?? [])] } : {})
    }
    const path = join(dir, `${label}.manifest`)
    const sealed = await sealManifest({ path, manifest, encryption: init.encryption, stateDir: init.stateDir, passphrase: init.passphrase, signal: init.signal })
    const { cid } = await fileCid(path, SNAPSHOT_PROFILE, { signal: init.signal })
    const manifestFile = { path, cid: cid.toString(), bytes: sealed.bytes }
    return { manifest, manifestFile, files: [...files, manifestFile], marker }
  } finally {
    for (const { database } of databases) await rm(database, { force: true })
  }
}

/** The lists a published manifest holds, as the index records them once its pointer PUT held. */
export function chainsOf (manifest: Manifest): RecordedChain[] {
  return manifest.devices.map(device => {
    const to = device.segments.at(-1)?.to
    if (to === undefined) throw new SnapshotFormatError(`device ${device.deviceId} has no segments`)
    return { deviceId: device.deviceId, toSeq: to, segments: JSON.stringify(device.segments) }
  })
}
