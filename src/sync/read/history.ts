import { rm, stat } from 'node:fs/promises'
import type { ObjectHome } from '../../store/index.js'
import { ENGINE_V1, inflateBound, openManifest, parseManifest, publishFetchBound, PUBLISH_PREFIX_BYTES, readSealedHeader, unseal, type Manifest } from '../../snapshot/index.js'
import { NothingAtTimeError, SnapshotFormatError } from '../../errors.js'
import { SNAPSHOT_PROFILE } from './snapshot-profile.js'
import { fetchedPath, type FetchInit } from './segment-fetch.js'
import { checkBinding } from './manifest-binding.js'

/** One publish in the chain, as `cidsync history` shows it. */
export interface HistoryEntry {
  readonly cid: string
  readonly engine: string
  readonly at: string
  readonly device: string
  readonly hostname: string
  readonly entries: number
  /** What the publish uploaded besides its manifest (a `/1` snapshot: its whole size). */
  readonly bytesAdded: number
  readonly previous: string | null
  /** The CID it had when it was made, when a forget linked it anew since (docs/retention.md). */
  readonly publishedAs?: string
  /** A user's labels (`cidsync snapshot --keep`): a forget always keeps the publish. */
  readonly marks?: readonly string[]
}

/** Manifests are immutable (named by their CID): each one read is kept, and never fetched again. */
export interface ManifestCache {
  get: (cid: string) => string | undefined
  put: (cid: string, json: string) => void
}

/** A walk never goes past this many publishes, whatever the chain says (a loop in a forged chain included). */
export const MAX_HISTORY = 100_000

/**
 * A cached publish. `v1a`: a `/1` snapshot whose header was authenticated (its body decrypted)
 * before it was cached; rows of kind `v1`, cached from the header alone by an older cidsync, are
 * read again.
 */
type Cached = { readonly kind: 'manifest', readonly manifest: Manifest } | { readonly kind: 'v1a', readonly entry: HistoryEntry }

function entryOf (cid: string, manifest: Manifest): HistoryEntry {
  return { cid, engine: 'cidsync-sqlite/2', at: manifest.createdAt, device: manifest.device, hostname: manifest.hostname, entries: manifest.entries, bytesAdded: manifest.bytesAdded, previous: manifest.previous, ...(manifest.publishedAs === undefined ? {} : { publishedAs: manifest.publishedAs }), ...(manifest.marks === undefined ? {} : { marks: manifest.marks }) }
}

/**
 * Reads one publish: from the cache, or fetched (verified), opened and then cached. A manifest
 * bound to another namespace or network than `init.binding` is a `ManifestNamespaceError`.
 */
export async function readPublish (clients: ObjectHome, cid: string, cache: ManifestCache, init: FetchInit): Promise<{ entry: HistoryEntry, manifest: Manifest | undefined }> {
  const publish = await readAny(clients, cid, cache, init)
  if (publish.manifest !== undefined) checkBinding(publish.manifest, cid, init.binding)
  return publish
}

async function readAny (clients: ObjectHome, cid: string, cache: ManifestCache, init: FetchInit): Promise<{ entry: HistoryEntry, manifest: Manifest | undefined }> {
  const cached = cache.get(cid)
  if (cached !== undefined) {
    try {
      const value = JSON.parse(cached) as Cached
      if (value.kind === 'v1a') return { entry: value.entry, manifest: undefined }
      // Any other kind (a /1 entry cached before it was authenticated) is read again.
      if (value.kind === 'manifest') {
        const manifest = parseManifest(JSON.stringify(value.manifest), cid)
        return { entry: entryOf(cid, manifest), manifest }
      }
    } catch {
      // A damaged cache row is fetched again.
    }
  }
  const path = fetchedPath(init, cid, '.read')
  try {
    // Its header says what it is: junk stops after the header's few KiB, a manifest at its most.
    await clients.objects.getFile(cid, SNAPSHOT_PROFILE, path, { signal: init.signal, boundBy: { prefixBytes: PUBLISH_PREFIX_BYTES, bound: publishFetchBound } })
    const header = await readSealedHeader(path)
    if (header.engine === ENGINE_V1 && 'createdAt' in header) {
      // Its time, device and count are shown and offered to restore: only once the key proves them.
      await authenticate(path, init)
      const entry: HistoryEntry = { cid, engine: ENGINE_V1, at: header.createdAt, device: header.device, hostname: '', entries: header.entries, bytesAdded: (await stat(path)).size, previous: null }
      cache.put(cid, JSON.stringify({ kind: 'v1a', entry } satisfies Cached))
      return { entry, manifest: undefined }
    }
    if (!('kind' in header) || header.kind !== 'manifest') throw new SnapshotFormatError(`${cid} is a ${header.engine} ${'kind' in header ? header.kind : 'file'}, not a publish (a manifest or a /1 snapshot)`)
    const manifest = await openManifest({ path, name: cid, stateDir: init.stateDir, passphrase: init.passphrase, acceptUnencrypted: init.acceptUnencrypted, signal: init.signal })
    cache.put(cid, JSON.stringify({ kind: 'manifest', manifest } satisfies Cached))
    return { entry: entryOf(cid, manifest), manifest }
  } finally {
    await rm(path, { force: true })
  }
}

/**
 * Decrypts a `/1` snapshot's body to nowhere: the tag authenticates its header (the same checks
 * and errors as a restore of it: another key, no cipher, changed bytes), nothing is kept.
 */
async function authenticate (path: string, init: FetchInit): Promise<void> {
  const body = `${path}.body`
  try {
    await unseal({ path, stateDir: init.stateDir, destination: body, passphrase: init.passphrase, acceptUnencrypted: init.acceptUnencrypted, inflateBound, signal: init.signal })
  } finally {
    await rm(body, { force: true })
  }
}

/**
 * Walks the chain from `start` back along `previous`: newest first, at most `limit` publishes,
 * never one twice.
 */
export async function * walkHistory (clients: ObjectHome, start: string, cache: ManifestCache, init: FetchInit & { readonly limit?: number }): AsyncGenerator<{ entry: HistoryEntry, manifest: Manifest | undefined }> {
  yield * chainFrom(start, init.limit, async (cid) => await readPublish(clients, cid, cache, init), publish => publish.entry.previous)
}

/** Follows `previous` from `start`: at most `limit` links (and {@link MAX_HISTORY}), never one twice. */
async function * chainFrom<T> (start: string, limit: number | undefined, read: (cid: string) => Promise<T>, previousOf: (link: T) => string | null): AsyncGenerator<T> {
  const seen = new Set<string>()
  const most = Math.min(limit ?? MAX_HISTORY, MAX_HISTORY)
  let cid: string | null = start
  while (cid !== null && seen.size < most) {
    if (seen.has(cid)) throw new SnapshotFormatError(`the history loops back to ${cid}: a manifest names a later one as its previous (damaged or forged)`)
    seen.add(cid)
    const link = await read(cid)
    yield link
    cid = previousOf(link)
  }
}

/**
 * A cached publish's row as `cidsync history` shows it, without checking the whole manifest again
 * (it was checked before it was cached): only the fields shown, each of the right type. Undefined
 * when the row is missing or does not hold them (then {@link readPublish} reads it whole, or fetches it).
 */
function cachedEntry (cid: string, cache: ManifestCache, binding: FetchInit['binding']): HistoryEntry | undefined {
  return cachedLink(cid, cache, binding)?.entry
}

/** A publish as a walk sees it: its row, and how many chains a forget replaced with it (0 for a `/1` snapshot). */
interface Link { readonly entry: HistoryEntry, readonly replaced: number }

/** {@link cachedEntry}, with the count of chains the manifest replaced (it was checked whole before it was cached). */
function cachedLink (cid: string, cache: ManifestCache, binding: FetchInit['binding']): Link | undefined {
  const json = cache.get(cid)
  if (json === undefined) return undefined
  let value: { kind?: unknown, entry?: HistoryEntry, manifest?: Record<string, unknown> }
  try {
    value = JSON.parse(json)
  } catch {
    return undefined
  }
  const bound = value.manifest
  if (typeof bound?.namespace === 'string') checkBinding({ namespace: bound.namespace, network: typeof bound.network === 'string' ? bound.network : '' }, cid, binding)
  try {
    if (value.kind === 'v1a' && value.entry !== undefined) return { entry: value.entry, replaced: 0 }
    const m = value.manifest
    if (value.kind !== 'manifest' || m === undefined || m === null) return undefined
    if (typeof m.createdAt !== 'string' || typeof m.device !== 'string' || typeof m.hostname !== 'string' || typeof m.entries !== 'number' ||
      typeof m.bytesAdded !== 'number' || (m.previous !== null && typeof m.previous !== 'string')) return undefined
    const entry: HistoryEntry = { cid, engine: 'cidsync-sqlite/2', at: m.createdAt, device: m.device, hostname: m.hostname, entries: m.entries, bytesAdded: m.bytesAdded, previous: m.previous as string | null, ...(typeof m.publishedAs === 'string' ? { publishedAs: m.publishedAs } : {}), ...marksOf(m.marks) }
    if (m.replaced !== undefined && !Array.isArray(m.replaced)) return undefined
    return { entry, replaced: Array.isArray(m.replaced) ? m.replaced.length : 0 }
  } catch {
    return undefined
  }
}

/**
 * {@link walkHistory} for what `cidsync history` lists: the entries alone, a cached manifest read
 * for its shown fields only (1,000 cached: 0.49 s of JSON and schema checks to a few ms;
 * docs/benchmarks.md), anything else read as {@link readPublish} does.
 */
export async function * walkEntries (clients: ObjectHome, start: string, cache: ManifestCache, init: FetchInit & { readonly limit?: number }): AsyncGenerator<HistoryEntry> {
  yield * chainFrom(start, init.limit, async (cid) => cachedEntry(cid, cache, init.binding) ?? (await readPublish(clients, cid, cache, init)).entry, entry => entry.previous)
}

/** The publish at a time, and what a caller says of it: the next one after, and whether a forget ran. */
export interface PublishAtTime {
  readonly entry: HistoryEntry
  readonly manifest: Manifest | undefined
  /** The publish just after `time`, newer than this one; undefined when this one is the newest. */
  readonly next: HistoryEntry | undefined
  /** A forget linked the chain anew above this publish: those between it and `next` may be gone. */
  readonly forgotten: boolean
}

/**
 * The newest publish made at or before `time` (history walked from `start`), or undefined when
 * the chain begins after it.
 */
export async function publishAt (clients: ObjectHome, start: string, time: Date, cache: ManifestCache, init: FetchInit): Promise<PublishAtTime | undefined> {
  let next: HistoryEntry | undefined
  let forgotten = false
  for await (const link of walkLinks(clients, start, cache, init)) {
    // Only the publish found is read whole (and its cached manifest checked again): it is the one used.
    if (Date.parse(link.entry.at) <= time.getTime()) return { ...await readPublish(clients, link.entry.cid, cache, init), next, forgotten }
    next = link.entry
    if (link.replaced > 0) forgotten = true
  }
  return undefined
}

/**
 * The chain from `start` for a walk that needs each publish's time, links and replaced chains
 * only: a cached manifest read for those fields (as {@link walkEntries}), anything else read whole.
 */
async function * walkLinks (clients: ObjectHome, start: string, cache: ManifestCache, init: FetchInit): AsyncGenerator<Link> {
  yield * chainFrom(start, undefined, async (cid) => cachedLink(cid, cache, init.binding) ?? linkOf(await readPublish(clients, cid, cache, init)), link => link.entry.previous)
}

function linkOf (publish: { entry: HistoryEntry, manifest: Manifest | undefined }): Link {
  return { entry: publish.entry, replaced: publish.manifest?.replaced?.length ?? 0 }
}

/**
 * The refusal of a time before every publish of the history from `start` (exit 3). It names the
 * oldest publish there, from which `--at` is answered, and says when a forget may have removed older ones.
 */
export async function nothingAtTime (clients: ObjectHome, start: string, time: Date, cache: ManifestCache, init: FetchInit): Promise<NothingAtTimeError> {
  let oldest: HistoryEntry | undefined
  let forgotten = false
  for await (const { entry, replaced } of walkLinks(clients, start, cache, init)) {
    oldest = entry
    if (replaced > 0) forgotten = true
  }
  const first = oldest === undefined ? '' : `; its oldest publish is of ${oldest.at}${forgotten ? ' (a `cidsync forget` may have removed older ones)' : ''}`
  return new NothingAtTimeError(`nothing was published at or before ${time.toISOString()} in the history from ${start}${first}: see \`cidsync history\` for the times there are`)
}

/**
 * The chain from `start` as far as the cache holds it, newest first, at most `limit`: what status
 * and the dashboard show without fetching anything.
 */
export function cachedHistory (cache: ManifestCache, start: string | null, limit: number, binding?: FetchInit['binding']): HistoryEntry[] {
  const entries: HistoryEntry[] = []
  const seen = new Set<string>()
  for (let cid = start; cid !== null && cid !== '' && entries.length < limit && !seen.has(cid);) {
    seen.add(cid)
    let entry: HistoryEntry | undefined
    try {
      entry = cachedEntry(cid, cache, binding)
    } catch {
      break
    }
    if (entry === undefined) break
    entries.push(entry)
    cid = entry.previous
  }
  return entries
}

/** A cached row's labels, when it holds a list of strings (it was checked whole before it was cached). */
function marksOf (marks: unknown): { marks?: string[] } {
  return Array.isArray(marks) && marks.length > 0 && marks.every(m => typeof m === 'string') ? { marks } : {}
}
