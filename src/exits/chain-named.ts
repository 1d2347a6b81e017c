import type { ObjectHome } from '../store/index.js'
import type { Manifest } from '../snapshot/index.js'
import type { FetchInit, ManifestCache } from '../sync/index.js'
import { chainObjects, contentObjects } from './chain-objects.js'

function freshCache (): ManifestCache {
  const kept = new Map<string, string>()
  return { get: cid => kept.get(cid), put: (cid, json) => { kept.set(cid, json) } }
}

/**
 * Which of `candidates` (a CAR's objects) the chain at `root` names: its publishes, the segments
 * they name, and the content objects its records name (read only when some candidate is not
 * among the first two: that builds the head's index aside). What else a CAR holds is nobody's:
 * an import asks no deal for it and gives it no mirror.
 */
export async function namedByChain (clients: ObjectHome, root: string, candidates: readonly string[], init: FetchInit): Promise<Set<string>> {
  const named = new Set<string>()
  let head: Manifest | undefined
  for await (const object of chainObjects(clients, root, freshCache(), init)) {
    named.add(object.cid)
    if (object.kind === 'manifest' && object.cid === root) head = object.manifest
  }
  if (head !== undefined && candidates.some(c => !named.has(c))) {
    for await (const object of contentObjects(clients, head, init)) named.add(object.cid)
  }
  return named
}
