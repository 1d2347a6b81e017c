import type { Config } from '../config/index.js'
import type { RemoteFile } from '../index/index.js'
import type { SyncStore } from './state/index.js'
import { PointerNotFoundError } from '../errors.js'
import type { SyncComponents } from './sync-components.js'
import { knownHead, noteSetBack, olderInChain } from './publish/index.js'

export type ReconcileComponents = SyncComponents

export interface Reconciled {
  readonly remoteFiles: number
  readonly gone: number
  readonly names: number
  readonly dealsMade: number
  readonly republished: boolean
  /** The pointer holds an older publish of the chain this device knows (set back): the runner publishes on top. */
  readonly pointerSetBack: boolean
  /** Listing records whose `cid` is not a CID: skipped (never stored, never put in a URL). */
  readonly malformed: number
}

const PAGE_WRITE = 2000

/**
 * Mirrors the account into the index: every page of the uploads listing (what a complete listing
 * no longer has is marked gone), the IPNS records, the deals this device asked for; and puts the
 * snapshot's IPNS name back if it points elsewhere. Pages come one at a time; the HTTP core backs
 * off when the service pushes back.
 */
export async function reconcile (components: ReconcileComponents, init: { signal?: AbortSignal, readPointer?: boolean } = {}): Promise<Reconciled> {
  const { index } = components
  const { home: clients, store, config } = components.repository
  const run = Date.now()
  let batch: RemoteFile[] = []
  let seen = 0
  let malformed = 0
  for await (const record of clients.files({ signal: init.signal, onProgress: (progress) => { malformed = progress.malformed } })) {
    batch.push({ id: record.id, cid: record.cid, fileName: record.fileName, size: record.fileSizeInBytes, sentForDeal: record.sentForDeal ?? '', createdAt: record.createdAt })
    seen++
    if (batch.length >= PAGE_WRITE) { index.remote.savePage(batch, run); batch = [] }
  }
  index.remote.savePage(batch, run)
  const gone = index.remote.markGoneBefore(run)

  const names = await clients.names.list({ signal: init.signal })
  index.remote.replaceNames(names.map(n => ({ ipnsName: n.ipnsName, ipnsId: n.ipnsId, cid: n.cid, lastUpdate: n.lastUpdate })), run)

  let dealsMade = 0
  for (const deal of index.remote.pendingDeals(components.deviceId)) {
    const deals = await clients.deals.dealStatus(deal.cid, { signal: init.signal })
    const made = deals.find(d => d.dealId !== undefined)
    if (made?.dealId !== undefined) {
      index.remote.recordDeal(deal.cid, made.dealId, made.provider, made.status)
      dealsMade++
    }
  }

  const pointerSetBack = init.readPointer !== false && await notePointer(components, store, config, init.signal)
  const republished = await republishName(components, store, config, init.signal)
  const result = { remoteFiles: seen, gone, names: names.length, dealsMade, republished, pointerSetBack, malformed }
  if (malformed > 0) components.logger.warn({ malformed }, 'the uploads listing holds records whose CID is not one: skipped; report it to the service')
  components.logger.info(result, 'reconciled')
  return result
}

/**
 * Looks at the pointer, for status to say whether it holds this device's last snapshot. Answers
 * whether it was set back to an older publish of the chain this device knows: an idle daemon has
 * no publish coming that would notice, so it is checked here, on every reconciliation.
 */
async function notePointer (components: ReconcileComponents, store: SyncStore, config: Config, signal?: AbortSignal): Promise<boolean> {
  // Read before the pointer: a publish of ours landing meanwhile must not make its base look set back.
  const head = knownHead(store)
  try {
    const pointer = await components.repository.home.pointers.current(config.namespace, config.network, { signal })
    store.notePointer(pointer.snapshotCid)
    if (head === undefined || !olderInChain(store.manifestCache, head, pointer.snapshotCid)) return false
    noteSetBack(store, components.logger, pointer.snapshotCid, head)
    return true
  } catch (err) {
    // The pointer needs the session token, the rest the API key: one missing must not stop the other.
    if (err instanceof PointerNotFoundError) store.notePointer('')
    else {
      components.logger.warn({ err }, 'could not read the pointer')
      store.notePointerLookedAt()
    }
    return false
  }
}

/** The snapshot's IPNS name must point at the last published snapshot. */
async function republishName (components: ReconcileComponents, store: SyncStore, config: Config, signal?: AbortSignal): Promise<boolean> {
  const keyName = config.snapshot.ipnsKey === 'auto' ? store.ipnsKey()?.name : config.snapshot.ipnsKey === '' ? undefined : config.snapshot.ipnsKey
  const last = store.lastPublished()?.cid
  if (keyName === undefined || last === undefined) return false
  if (components.index.remote.nameTarget(keyName) === last) return false
  const published = await components.repository.home.names.publish(keyName, last, { signal })
  store.noteIpnsPublished(keyName, published.ipnsId, last)
  return true
}
