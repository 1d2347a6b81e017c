import { mkdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../config/index.js'
import { CidsyncError, ContentNotFoundError, IntegrityError, PointerNotFoundError, PointerUnreadableError, SnapshotFormatError, SnapshotIntegrityError, SnapshotKeyError } from '../errors.js'
import { ENGINE, readSnapshot } from '../snapshot/index.js'
import { acceptsUnencrypted } from './merge.js'
import { SNAPSHOT_PROFILE } from './snapshot-profile.js'
import type { PublishComponents, PublishInit } from './publish.js'

/** What the pointer holds now: its CID and entry count, or undefined when nothing is stored. */
export async function currentPointer (components: PublishComponents, config: Config, signal?: AbortSignal): Promise<{ cid: string, memories: number | undefined } | undefined> {
  try {
    const pointer = await components.clients.pointers.current(config.namespace, config.network, { signal })
    if (pointer.engine !== '' && pointer.engine !== ENGINE) {
      throw new CidsyncError(`the pointer for ${config.namespace} on ${config.network} holds a snapshot of engine ${pointer.engine}: cidsync will not overwrite it; use another namespace`)
    }
    return { cid: pointer.snapshotCid, memories: pointer.memories }
  } catch (err) {
    if (err instanceof PointerNotFoundError) return undefined
    throw err
  }
}

/** Failures that retrying cannot mend: the pointer's snapshot is not there, or not one this device can open. */
function isUnreadable (err: unknown): boolean {
  return err instanceof ContentNotFoundError || err instanceof IntegrityError || err instanceof SnapshotFormatError ||
    err instanceof SnapshotKeyError || err instanceof SnapshotIntegrityError
}

/**
 * Fetches the pointer's snapshot through the gateways, opens it, and merges its other devices'
 * rows into the index. A snapshot that is missing or foreign is a {@link PointerUnreadableError}
 * naming the repair; a network failure stays what it is (tried again later).
 */
export async function fetchAndMerge (components: PublishComponents, init: PublishInit, cid: string, label: string): Promise<void> {
  const dir = join(init.config.stateDir, 'snapshots')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const fetched = join(dir, `${label}-${process.pid}.snap`)
  const database = join(dir, `${label}-${process.pid}.sqlite`)
  try {
    try {
      await components.clients.gateway.fetchVerified(cid, SNAPSHOT_PROFILE, fetched, { signal: init.signal })
      await readSnapshot({ path: fetched, stateDir: init.config.stateDir, destination: database, passphrase: init.passphrase, signal: init.signal, acceptUnencrypted: acceptsUnencrypted(init.config) })
    } catch (err) {
      if (!isUnreadable(err)) throw err
      const { namespace, network } = init.config
      throw new PointerUnreadableError(`the pointer for ${namespace} on ${network} names ${cid}, which cannot be used here: ${(err as Error).message}. ` +
        'Publishing stops there (nothing of it can be merged); to put this device\'s index, with every other device\'s rows it holds, in its place, run `cidsync pointer repair`', cid, { cause: err })
    }
    const merged = components.index.mergeFrom(database, components.deviceId)
    components.logger.info({ from: cid, devices: merged.devicesTaken.length }, 'merged another device\'s snapshot')
  } finally {
    await rm(fetched, { force: true })
    await rm(database, { force: true })
  }
}
