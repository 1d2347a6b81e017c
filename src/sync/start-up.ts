import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { moveAside } from '../index/index.js'
import { SyncStateDamagedError } from '../errors.js'
import { SyncStore, SYNC_STATE_FILE, removeLeftovers, type LeftoversRemoved, jobFiles } from './state/index.js'
import { STATE_NAMES } from '../config/index.js'

/** Something the daemon found wrong with its sync files at start, and what it did. */
export interface SyncRecovery { readonly file: string, readonly problem: string, readonly action: string }

export interface PreparedSyncState {
  readonly recovered: readonly SyncRecovery[]
  readonly leftovers: LeftoversRemoved
  /** The sync store, checked and open: the caller's for the rest of its run (it closes it). */
  readonly store: SyncStore
}

export interface PrepareSyncStateInit {
  /** Why the index this device published from is gone (missing, or damaged and rebuilt), if it is. */
  readonly indexLost?: string
}

/**
 * Start-up, holding the state dir's lock, before any publish: a `sync.sqlite` that cannot be read
 * is moved aside and started afresh (the next publish then merges the pointer before it PUTs);
 * an index that was lost since the last publish makes the next publish merge the pointer first
 * too, so it never PUTs an index that lost the rows it held; killed jobs' temp files are removed.
 */
export async function prepareSyncState (stateDir: string, init: PrepareSyncStateInit = {}): Promise<PreparedSyncState> {
  const recovered: SyncRecovery[] = []
  const path = join(stateDir, SYNC_STATE_FILE)
  let store: SyncStore | undefined
  try {
    store = new SyncStore(stateDir)
    store.check()
  } catch (err) {
    store?.close()
    if (!(err instanceof SyncStateDamagedError)) throw err
    const movedTo = existsSync(path) ? moveAside(path) : path
    recovered.push({
      file: path,
      problem: `damaged: ${err.problem}`,
      action: `moved aside to ${movedTo} and started afresh: the next publish merges the pointer before it publishes; an ipns_key = "auto" key is made again`
    })
    store = new SyncStore(stateDir)
  }
  try {
    const published = store.base() ?? store.lastPublished()?.cid
    if (init.indexLost !== undefined && published !== undefined && published !== '') {
      // Forget what "nobody else published" meant: the pointer's snapshot is merged before any PUT.
      store.forgetBase()
      recovered.push({
        file: join(stateDir, STATE_NAMES.index),
        problem: `${init.indexLost}, though this device had published ${published}`,
        action: 'rebuilt from the folders; the next publish first merges the pointer\'s snapshot back in (other devices\' rows), so nothing is published without them'
      })
    }
    const leftovers = await removeLeftovers(stateDir, jobFiles(store.current()))
    return { recovered, leftovers, store }
  } catch (err) {
    store.close()
    throw err
  }
}
