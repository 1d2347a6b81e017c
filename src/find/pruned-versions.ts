import type { Index } from '../index/index.js'
import type { FileVersion } from './file-log.js'
import { recordObjects } from './stored-state.js'

/** Older versions a timeline checks against the store at most, newest first: each is a few requests. */
export const MAX_VERSIONS_CHECKED = 200

/** What a check asks of the store: whether it holds an object. */
export type HasObject = (cid: string, options: { readonly signal?: AbortSignal }) => Promise<boolean>

/**
 * What a check asks of a store that can only answer by its listing (a service's `has` reads the
 * whole listing per object): which of `objects` it holds, all in one pass.
 */
export type HeldObjects = (objects: ReadonlySet<string>, options: { readonly signal?: AbortSignal }) => Promise<ReadonlySet<string>>

/**
 * {@link HeldObjects} by one pass over a listing: it stops once every object asked for is seen,
 * and keeps only those, so memory follows what is asked, not the account.
 */
export function heldByListing (list: (options: { readonly signal?: AbortSignal }) => AsyncIterable<{ readonly cid: string }>): HeldObjects {
  return async (objects, options) => {
    const found = new Set<string>()
    if (objects.size === 0) return found
    for await (const object of list(options)) {
      if (!objects.has(object.cid)) continue
      found.add(object.cid)
      if (found.size === objects.size) break
    }
    return found
  }
}

/** A version whose content a prune removed: its records name objects the store no longer holds. */
export type CheckedVersion = FileVersion & { readonly pruned: boolean }

/**
 * Marks each older version whose content is gone from the store (a prune deleted it after a
 * forget): no record of its CID has every object. Its content record outlives the objects (in the
 * index and in kept segments), so without this `log` would offer what `get` cannot fetch. The
 * current rows are not asked: storing keeps their objects, and a publish checks them.
 */
export async function checkPruned (index: Index, versions: readonly FileVersion[], has: HasObject | { readonly held: HeldObjects }, init: { readonly signal?: AbortSignal } = {}): Promise<CheckedVersion[]> {
  const older = versions.filter(v => !v.current && v.fetchable && v.cid !== null)
    .sort((a, b) => b.at - a.at).slice(0, MAX_VERSIONS_CHECKED)
  let holds: (object: string) => Promise<boolean>
  if (typeof has === 'function') {
    const asked = new Map<string, Promise<boolean>>()
    holds = async (object) => {
      let answer = asked.get(object)
      if (answer === undefined) {
        answer = has(object, { signal: init.signal })
        asked.set(object, answer)
      }
      return await answer
    }
  } else {
    // Every object of every record asked at once: one listing, not one per object.
    const wanted = new Set<string>()
    for (const version of older) {
      for (const row of index.content.lookup(version.cid as string)) for (const [object] of recordObjects(row) ?? []) wanted.add(object)
    }
    const held = await has.held(wanted, { signal: init.signal })
    holds = async (object) => held.has(object)
  }
  const gone = new Map<string, boolean>()
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
