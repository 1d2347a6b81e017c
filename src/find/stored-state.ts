import type { Index, RemoteState } from '../index/index.js'

/**
 * Whether a CID's content is kept where it can be fetched again: `stored` once any device holds
 * a content record for it (docs/content-format.md: what `cidsync get` brings back), or what
 * reconciliation mirrored of the account (the REMOTE column `cidsync ls` prints): `stored` or
 * `sent-for-deal` once an upload of that CID is listed, `local-only` otherwise.
 */
export type StoredState = RemoteState

export function storedState (index: Index, cid: string | null): StoredState {
  const remote = index.remote.stateOf(cid)
  if (remote !== 'local-only' || cid === null) return remote
  return hasContentRecord(index, cid) ? 'stored' : 'local-only'
}

/**
 * Whether `cidsync get` can bring that content back: only a content record says where its bytes
 * lie (an upload listed under the same CID by some other tool is not one `get` reads).
 */
export function fetchable (index: Index, cid: string | null): boolean {
  return cid !== null && hasContentRecord(index, cid)
}

function hasContentRecord (index: Index, cid: string): boolean {
  return index.content.lookup(cid).length > 0
}
