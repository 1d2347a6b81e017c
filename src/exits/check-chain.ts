import { join } from 'node:path'
import { rm } from 'node:fs/promises'
import { ImportRefusedError, SegmentUnusableError } from '../errors.js'
import type { ObjectHome } from '../store/index.js'
import { fetchSegments, fetchV1Snapshot, isUnusable, missingKey, removeFetched, walkHistory, type FetchInit, type HistoryEntry, type ManifestCache } from '../sync/index.js'

/** A chain an import checked: every publish and segment fetched from the service, verified, decrypted, checked. */
export interface CheckedChain {
  readonly head: HistoryEntry
  /** The live rows of the head publish (what the pointer's `memories` says). */
  readonly entries: number
  /** Every publish of the chain, newest first. */
  readonly publishes: readonly string[]
  readonly segments: number
}

function freshCache (): ManifestCache {
  const kept = new Map<string, string>()
  return { get: cid => kept.get(cid), put: (cid, json) => { kept.set(cid, json) } }
}

/**
 * The restore drill's reads, on every point of the chain from `root`: each publish fetched from
 * the service (nothing from a cache: what was just put there is what is read), verified against
 * its CID, decrypted under this device's key and bound to `init.binding`; each segment fetched,
 * decrypted and checked as a restore would. Anything that does not check out (another key, another
 * namespace, a forgery) is an {@link ImportRefusedError} naming the object; a network failure
 * throws as it is (the check could not run, and a rerun finishes it).
 */
export async function checkChain (clients: ObjectHome, root: string, init: FetchInit): Promise<CheckedChain> {
  const publishes: string[] = []
  const checked = new Set<string>()
  let head: HistoryEntry | undefined
  let entries = 0
  let current = root
  try {
    for await (const publish of walkHistory(clients, root, freshCache(), init)) {
      current = publish.entry.cid
      publishes.push(current)
      if (head === undefined) { head = publish.entry; entries = publish.entry.entries }
      if (publish.manifest === undefined) {
        const path = join(init.dir, `${init.label}-${process.pid}-v1.sqlite`)
        try {
          await fetchV1Snapshot(clients, current, path, init)
        } finally {
          for (const suffix of ['', '-wal', '-shm']) await rm(`${path}${suffix}`, { force: true })
        }
        continue
      }
      for (const device of publish.manifest.devices) {
        for (const segment of device.segments) {
          if (checked.has(segment.cid)) continue
          await removeFetched(await fetchSegments(clients, [{ deviceId: device.deviceId, segment }], init))
          checked.add(segment.cid)
        }
      }
    }
  } catch (err) {
    if (!isUnusable(err)) throw err
    const cid = err instanceof SegmentUnusableError ? err.cid : current
    const key = missingKey(err) === undefined ? '' : ' (it is sealed under another key than this device\'s: a CAR of another user\'s objects, or this device lacks the key it was made with: `cidsync key import`)'
    throw new ImportRefusedError(`the CAR's chain does not check out at ${cid}${key}: ${(err as Error).message}. The pointer was not moved (the CAR's objects stay on the service, referenced by nothing)`, cid, { cause: err })
  }
  if (head === undefined) throw new ImportRefusedError(`the CAR's root ${root} holds no publish. The pointer was not moved (the CAR's objects stay on the service, referenced by nothing)`, root)
  return { head, entries, publishes, segments: checked.size }
}
