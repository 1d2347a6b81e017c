import { rm } from 'node:fs/promises'
import { checkIndexFile } from '../../index/index.js'
import type { ObjectHome, StoreProgressEvent } from '../../store/index.js'
import { readSnapshot } from '../../snapshot/index.js'
import { fetchedPath, type FetchInit } from './segment-fetch.js'
import { SNAPSHOT_PROFILE } from './snapshot-profile.js'

// The `/1` engine (one whole snapshot per publish, before manifests and segments), kept apart
// from the `/2` engine's segment fetch: older pointers and histories still name such snapshots.

/**
 * Fetches a whole `cidsync-sqlite/1` snapshot (verified against its CID), opens and checks it into
 * `destination`. Its errors are the snapshot's own (`SnapshotKeyError`, `SnapshotUnencryptedError`, ...).
 */
export async function fetchV1Snapshot (clients: ObjectHome, cid: string, destination: string, init: FetchInit): Promise<void> {
  const path = fetchedPath(init, cid, '.snap')
  try {
    const report = init.onProgress
    const onProgress = report === undefined ? undefined : (event: StoreProgressEvent): void => { if (event.type === 'store:get:progress') report({ type: 'restore:download', detail: event.detail }) }
    await clients.objects.getFile(cid, SNAPSHOT_PROFILE, path, { signal: init.signal, onProgress })
    await readSnapshot({ path, stateDir: init.stateDir, destination, passphrase: init.passphrase, acceptUnencrypted: init.acceptUnencrypted, signal: init.signal, check: checkIndexFile })
  } finally {
    await rm(path, { force: true })
  }
}
