import type { Index } from '../index/index.js'
import type { FileVersion } from './file-log.js'
import { recordObjects } from './stored-state.js'

/** Older versions a timeline checks against the store at most, newest first: each is a few requests. */
export const MAX_VERSIONS_CHECKED = 200

/** What a check asks of the store: whether it holds an object. */
export type HasObject = (cid: string, options: { readonly signal?: AbortSignal }) => Promise<boolean>

/** A version whose content a prune removed: its records name objects the store no longer holds. */
export type CheckedVersion = FileVersion & { readonly pruned: boolean }

/**
 * Marks each older version whose content is gone from the store (a prune deleted it after a
 * forget): no record of its CID has every object. Its content record outlives the objects (in the
 * index and in kept segments), so without this `log` would offer what `get` cannot fetch. The
 * current rows are not asked: storing keeps their objects, and a publish checks them.
 */
export async function checkPruned (index: Index, versions: readonly FileVersion[], has: HasObject, init: { readonly signal?: AbortSignal } = {}): Promise<CheckedVersion[]> {
  const asked = new Map<string, Promise<boolean>>()
  const holds = async (object: string): Promise<boolean> => {
    let answer = asked.get(object)
    if (answer === undefined) {
      answer = has(object, { signal: init.signal })
      asked.set(object, answer)
    }
    return await answer
  }
  const gone = new Map<string, boolean>()
  const older = versions.filter(v => !v.current && v.fetchable && v.cid !== null)
    .sort((a, b) => b.at - a.at).slice(0, MAX_VERSIONS_CHECKED)
  for (const version of older) {
    const cid = version.cid as string
    if (gone.has(cid)) continue
    gone.set(cid, !(await anyWhole(index, cid, holds)))
  }
  return versions.map(v => gone.get(v.cid ?? '') === true && !v.current ? { ...v, fetchable: false, pruned: true } : { ...v, pruned: false })
}

/** Whether some content record of `cid` has every one of its objects in the store. */
async function anyWhole (index: Index, cid: string, holds: (object: string) => Promise<boolean>): Promise<boolean> {
  for (const row of index.content.lookup(cid)) {
    const objects = recordObjects(row)
    if (objects === undefined) continue
    let whole = true
    for (const [object] of objects) {
      if (!(await holds(object))) { whole = false; break }
    }
    if (whole) return true
  }
  return false
}
