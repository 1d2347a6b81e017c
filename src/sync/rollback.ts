import type { Index } from '../index/index.js'
import type { Manifest } from '../snapshot/index.js'

/** A device the pointer's publish knows less of than this index took from the pointer before. */
export interface Behind { readonly deviceId: string, readonly there: number, readonly here: number }

/**
 * Whether the pointer's publish lacks what an earlier pointer held (docs/snapshot-format.md,
 * "Rollback"): every publish is made on top of the one before, so each device's list only grows;
 * a list that ends before the one this index recorded from the pointer (or this device's own, before
 * the furthest it published) means the pointer was set back, or a device published without merging.
 * Answers the devices it lacks, this device first; empty when it holds all.
 */
export function behindPointer (index: Index, manifest: Manifest, self: string, ownPublished: number | undefined): Behind[] {
  const there = new Map(manifest.devices.map(d => [d.deviceId, d.lastSeq]))
  const expected = new Map(index.segments.chains().map(c => [c.deviceId, c.toSeq]))
  if (ownPublished !== undefined) expected.set(self, Math.max(ownPublished, expected.get(self) ?? 0))
  const behind: Behind[] = []
  for (const [deviceId, here] of expected) {
    const seq = there.get(deviceId) ?? 0
    if (seq < here) behind.push({ deviceId, there: seq, here })
  }
  return behind.sort((a, b) => Number(b.deviceId === self) - Number(a.deviceId === self))
}
