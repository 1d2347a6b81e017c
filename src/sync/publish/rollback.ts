import type { Logger } from 'pino'
import type { Index } from '../../index/index.js'
import type { Manifest } from '../../snapshot/index.js'
import { cachedHistory, type ManifestCache } from '../read/index.js'
import type { SyncStore } from '../state/index.js'

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

/** How far back the chain this device knows is looked through. */
const CHAIN_LIMIT = 10_000

/** The newest publish this device put or took in: its base, else (the base forgotten) its own last publish. */
export function knownHead (store: SyncStore): string | undefined {
  const base = store.base()
  return base !== undefined && base !== '' ? base : store.lastPublished()?.cid
}

/**
 * Whether `cid` is an older publish of the chain behind `head`, from the manifests this device
 * has read (nothing fetched). A pointer holding one was set back: the head holds all it holds,
 * so a publish on top of the head loses nothing and keeps the publishes the rollback hid.
 */
export function olderInChain (cache: ManifestCache, head: string | undefined, cid: string): boolean {
  if (head === undefined || head === '' || cid === '' || cid === head) return false
  // Each cached entry's `previous` is an authenticated link too (the oldest may not be cached).
  return cachedHistory(cache, head, CHAIN_LIMIT).some(e => e.cid === cid || e.previous === cid)
}

/** Records a pointer found set back to `cid`, an older publish than `head`, for status and the log. */
export function noteSetBack (store: SyncStore, logger: Logger, cid: string, head: string): void {
  const message = `the pointer holds ${cid}, which lacks what it held before: ${head}, which this device published or took in after it, is newer. ` +
    'The service set the pointer back: this device publishes on top of its last known publish, so no publish is lost'
  logger.warn({ pointer: cid, head, code: 'ERR_POINTER_ROLLED_BACK' }, message)
  store.noteRollback({ at: new Date().toISOString(), code: 'ERR_POINTER_ROLLED_BACK', message, pointer: cid })
}
