import { join } from 'node:path'
import { rm } from 'node:fs/promises'
import { CID } from 'multiformats/cid'
import { CID_PROFILES, isCidProfileName, type CidProfile } from '../content/index.js'
import { parseContentRecord } from '../custody/index.js'
import { openIndex, type Index } from '../index/index.js'
import type { ObjectHome } from '../store/index.js'
import { buildIndex, walkHistory, type FetchInit, type HistoryEntry, type ManifestCache } from '../sync/index.js'
import type { Manifest } from '../snapshot/index.js'

/** One object of an export: its CID, what it is, and the profile its blocks were made with. */
export interface ChainObject {
  readonly cid: string
  readonly kind: 'manifest' | 'snapshot' | 'segment' | 'content'
  readonly profile: CidProfile
  /** The most it may weigh, when the chain says (a segment's size). */
  readonly bytes?: number
  /** A publish's time. */
  readonly at?: string
  /** For a message: which publish or file it belongs to. */
  readonly about: string
}

/** Snapshot objects and sealed content are uploaded under Kubo's CIDv1 profile (sync's SNAPSHOT_PROFILE). */
const OBJECT_PROFILE = CID_PROFILES['kubo-cidv1']
const BATCH = 500

/**
 * Every object a restore at `root` and at every earlier point of its history needs, root first:
 * each publish (a manifest, or a `/1` snapshot), then the segments it names that no later publish
 * named. Manifests are read (decrypted, bound to `init.binding`) to learn their segments. Each
 * publish comes with its history entry, and a manifest with its body.
 */
export async function * chainObjects (clients: ObjectHome, root: string, cache: ManifestCache, init: FetchInit): AsyncGenerator<ChainObject & { readonly manifest?: Manifest, readonly entry?: HistoryEntry }> {
  const segments = new Set<string>()
  for await (const publish of walkHistory(clients, root, cache, init)) {
    const at = `the publish of ${publish.entry.at}`
    if (publish.manifest === undefined) {
      yield { cid: publish.entry.cid, kind: 'snapshot', profile: OBJECT_PROFILE, about: at, at: publish.entry.at, entry: publish.entry }
      continue
    }
    yield { cid: publish.entry.cid, kind: 'manifest', profile: OBJECT_PROFILE, about: at, at: publish.entry.at, entry: publish.entry, manifest: publish.manifest }
    for (const device of publish.manifest.devices) {
      for (const segment of device.segments) {
        if (segments.has(segment.cid)) continue
        segments.add(segment.cid)
        yield { cid: segment.cid, kind: 'segment', profile: OBJECT_PROFILE, bytes: segment.bytes, about: `${segment.kind} ${segment.from}..${segment.to} of device ${device.deviceId.slice(0, 12)} (${at})` }
      }
    }
  }
}

/** The profile plain content was stored with: its file's, or what its CID can only have been made with. */
function plainProfile (cid: string, indexed: string | null): CidProfile {
  if (indexed !== null && isCidProfileName(indexed)) return CID_PROFILES[indexed]
  return CID.parse(cid).version === 0 ? CID_PROFILES['unixfs-v0-2015'] : OBJECT_PROFILE
}

/**
 * Every content object (packs and parts, and plain files) the records of the publish `manifest`
 * name, each once: its index is built aside (segments fetched and checked) and its records read
 * in batches. Records are never deleted, so an earlier point's records are among them. `sizes`
 * is told each object's size as the records say it (the end of the last blob they place in it),
 * whole once the walk ends. With `skipPruned`, an object no live row's record names (an older
 * version) is given only when the store still lists it: a prune may have deleted it. Those come
 * last, after one walk of the listing; the ones left out are counted in `pruned`.
 */
export async function * contentObjects (clients: ObjectHome, manifest: Manifest, init: FetchInit, sizes?: Map<string, number>, skipPruned?: { pruned: number }): AsyncGenerator<ChainObject> {
  const path = join(init.dir, `export-content-${process.pid}.sqlite`)
  const remove = async (): Promise<void> => { for (const suffix of ['', '-wal', '-shm']) await rm(`${path}${suffix}`, { force: true }) }
  await remove()
  await buildIndex(clients, manifest, path, init)
  const index = openIndex(path, { check: false })
  const seen = new Set<string>()
  const live = skipPruned === undefined ? undefined : liveObjects(index)
  const older: ChainObject[] = []
  try {
    let after: { deviceId: string, cid: string } | undefined
    for (;;) {
      const batch = index.content.recordsAfter(after, BATCH)
      if (batch.length === 0) break
      for (const row of batch) {
        after = { deviceId: row.deviceId, cid: row.cid }
        const record = parseContentRecord({ cid: row.cid, size: row.size, sealing: row.sealing, keyId: row.keyId, keySalt: row.keySalt, objects: JSON.parse(row.objects) as unknown })
        const profile = record.sealing === 'none' ? plainProfile(record.cid, row.cidProfile) : OBJECT_PROFILE
        for (const [object, offset, length] of record.objects) {
          if (sizes !== undefined) sizes.set(object, Math.max(sizes.get(object) ?? 0, offset + length))
          if (seen.has(object)) continue
          seen.add(object)
          const one: ChainObject = { cid: object, kind: 'content', profile, about: `content ${record.cid}` }
          if (live === undefined || live.has(object)) yield one
          else older.push(one)
        }
      }
    }
  } finally {
    index.close()
    await remove()
  }
  if (older.length === 0 || skipPruned === undefined) return
  const listed = new Set(older.map(o => o.cid))
  const held = new Set<string>()
  for await (const object of clients.objects.list({ signal: init.signal })) if (listed.has(object.cid)) held.add(object.cid)
  for (const object of older) {
    if (held.has(object.cid)) yield object
    else {
      skipPruned.pruned++
      sizes?.delete(object.cid)
    }
  }
}

/** The objects of the records a live row of the index names: what its newest state holds. */
function liveObjects (index: Index): Set<string> {
  const live = new Set<string>()
  for (const json of index.content.liveRecordObjects()) {
    try {
      for (const part of JSON.parse(json) as unknown[]) if (Array.isArray(part) && typeof part[0] === 'string') live.add(part[0])
    } catch {
      // A record that does not read is refused where it is parsed, above.
    }
  }
  return live
}
