import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { ForeignPointerError, PointerNotFoundError, PointerUnreadableError, SnapshotUnencryptedError } from '../../errors.js'
import { READABLE_ENGINES } from '../../snapshot/index.js'
import { cachedHistory, readPublish, mergeManifest, unboundMayMerge, isUnusable, missingKey, type FetchInit, fetchV1Snapshot } from '../read/index.js'
import type { PublishComponents, PublishInit } from './publish-init.js'
import type { SyncStore } from '../state/index.js'
import { behindPointer, type Behind } from './rollback.js'

/** What the pointer holds now: its CID and entry count, or undefined when nothing is stored. */
export async function currentPointer (components: PublishComponents, signal?: AbortSignal): Promise<{ cid: string, memories: number | undefined } | undefined> {
  const { config, home } = components.repository
  try {
    const pointer = await home.pointers.current(config.namespace, config.network, { signal })
    if (pointer.engine !== '' && !READABLE_ENGINES.includes(pointer.engine)) {
      throw new ForeignPointerError(`the pointer for ${config.namespace} on ${config.network} holds a snapshot of engine ${pointer.engine}: cidsync will not overwrite it; use another namespace`)
    }
    return { cid: pointer.snapshotCid, memories: pointer.memories }
  } catch (err) {
    if (err instanceof PointerNotFoundError) return undefined
    throw err
  }
}

/**
 * Fetches what the pointer names through the gateways (a `/2` manifest and only the segments this
 * index lacks, or a whole `/1` snapshot), opens it, and merges its other devices' rows into the
 * index. Something missing or foreign is a {@link PointerUnreadableError} naming the repair; a
 * network failure stays what it is (tried again later). A device's list at an implausible
 * sequence is refused (the rest merged) and recorded for status. Answers `rolledBack` when the
 * pointer's publish lacks what this index took from the pointer before (said in the log and
 * status): the caller then publishes on top of it.
 */
export async function fetchAndMerge (components: PublishComponents, init: PublishInit, cid: string, label: string): Promise<{ rolledBack: boolean }> {
  const { repository } = components
  const fetch = repository.readContext(label, { signal: init.signal })
  try {
    const { store } = repository
    const { manifest } = await readPublish(repository.home, cid, store.manifestCache, fetch)
    if (manifest === undefined) {
      await mergeV1(components, init, cid, fetch)
      return { rolledBack: false }
    }
    unboundMayMerge(manifest, cid, { boundSeen: store.boundSeen(), ours: () => ourChain(store) })
    if (manifest.namespace !== undefined) store.noteBound()
    const ownPublished = store.ownSeq(components.deviceId)
    const behind = behindPointer(components.index, manifest, components.deviceId, ownPublished)
    const merged = await mergeManifest({ ...components, home: repository.home }, manifest, { ...fetch, name: cid }, { ownPublished })
    components.logger.info({ from: cid, devices: merged.devicesTaken.length, segments: merged.segmentsFetched }, 'merged other devices\' segments')
    for (const refusal of merged.refused) components.logger.error({ from: cid, device: refusal.deviceId, lastSeq: refusal.lastSeq, known: refusal.known, code: refusal.error.code }, refusal.error.message)
    const first = merged.refused[0]
    store.noteRefused(first === undefined ? null : { at: new Date().toISOString(), code: first.error.code, message: merged.refused.length === 1 ? first.error.message : `${first.error.message} (and ${merged.refused.length - 1} more devices' lists)` })
    if (behind.length === 0) return { rolledBack: false }
    const worst = behind[0] as Behind
    const message = `the pointer holds ${cid}, which lacks what it held before: device ${worst.deviceId}${worst.deviceId === components.deviceId ? ' (this one)' : ''} at sequence ${worst.there} there, ${worst.here} in this device's last publish` +
      `${behind.length > 1 ? ` (and ${behind.length - 1} more devices)` : ''}. The service set the pointer back, or a device published without merging: this device publishes on top of it, with every row it holds`
    components.logger.warn({ pointer: cid, behind, code: 'ERR_POINTER_ROLLED_BACK' }, message)
    store.noteRollback({ at: new Date().toISOString(), code: 'ERR_POINTER_ROLLED_BACK', message, pointer: cid })
    return { rolledBack: true }
  } catch (err) {
    // No cipher: its own message names the choices (accept it, or repair the pointer). Another key:
    // this device's problem, never the pointer's (a repair would put this device's key over
    // every other device's history), so never offered.
    if (!isUnusable(err) || err instanceof SnapshotUnencryptedError) throw err
    const key = missingKey(err)
    if (key !== undefined) throw key
    const { namespace, network } = repository.config
    throw new PointerUnreadableError(`the pointer for ${namespace} on ${network} names ${cid}, which cannot be used here: ${(err as Error).message}. ` +
      'Publishing stops there (nothing of it can be merged); to put this device\'s index, with every other device\'s rows it holds, in its place, run `cidsync pointer repair`', cid, { cause: err })
  }
}

/** How far back {@link ourChain} looks. */
const OUR_CHAIN_LIMIT = 10_000

/** This namespace's publishes this device knows: its base, its last publish, and the cached chain behind them. */
function ourChain (store: SyncStore): Set<string> {
  const heads = [store.base(), store.lastPublished()?.cid].filter((c): c is string => c !== undefined && c !== '')
  // Each cached entry's `previous` is an authenticated link of the chain too (the oldest may not be cached).
  const chain = heads.flatMap(head => cachedHistory(store.manifestCache, head, OUR_CHAIN_LIMIT).flatMap(entry => [entry.cid, entry.previous ?? '']))
  return new Set([...heads, ...chain].filter(c => c !== ''))
}

/** A `cidsync-sqlite/1` snapshot: the whole index, merged device by device (their lists forgotten: the next publish writes bases). */
async function mergeV1 (components: PublishComponents, init: PublishInit, cid: string, fetch: FetchInit): Promise<void> {
  const database = join(fetch.dir, `${fetch.label}-${process.pid}.sqlite`)
  try {
    await fetchV1Snapshot(components.repository.home, cid, database, fetch)
    const merged = components.index.mergeFrom(database, components.deviceId)
    components.logger.info({ from: cid, devices: merged.devicesTaken.length }, 'merged another device\'s cidsync-sqlite/1 snapshot')
  } finally {
    await rm(database, { force: true })
  }
}
