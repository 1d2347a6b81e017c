import type { Index, RemoteState } from '../index/index.js'

/**
 * Whether a CID's content is kept where it can be fetched again. Today that is what reconciliation
 * mirrored of the account (the REMOTE column `cidsync ls` prints): `stored` or `sent-for-deal`
 * once an upload of it is listed, `local-only` otherwise. This is the one seam content custody
 * (`cidsync get`, its own records of stored content) replaces: every answer of this room goes
 * through it.
 */
export type StoredState = RemoteState

export function storedState (index: Index, cid: string | null): StoredState {
  // Content custody's own record of the bytes (sealed into packs and parts, so never listed under
  // the file's CID on the account) makes it fetchable with `get` and the dashboard's download.
  if (cid !== null && index.content.lookup(cid).length > 0) return 'stored'
  return index.remote.stateOf(cid)
}

/** Whether a version in that state can be fetched back (content custody will say more). */
export function fetchable (state: StoredState): boolean {
  return state !== 'local-only'
}
