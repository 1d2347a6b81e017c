import { walkHistory, SNAPSHOT_PROFILE } from '../read/index.js'
import type { Repository } from '../repository.js'
import type { MirrorLog } from '../state/index.js'

/**
 * Logs for the mirrors every publish of the history behind the last publish logged, with the
 * segments each names: a device takes in only the publish the pointer holds when it merges, so
 * another device's earlier publishes (one with no mirror of its own) never reached the mirror,
 * whose `verify --full` then counted one publish and failed on the next, and whose `restore --at`
 * an earlier time could not work. Manifests are read through the primary's gateways into the
 * manifest cache (each once); the walk stops at a publish whose history an earlier walk logged.
 * Answers how many objects were new.
 */
export async function logHistory (primary: Repository, signal: AbortSignal): Promise<number> {
  const { store } = primary
  const log: MirrorLog = store.mirrorLog
  const head = log.lastPointer()
  if (head === undefined) return 0
  const walked = new Set(log.historyWalked())
  if (walked.has(head)) return 0
  const objects: Array<{ cid: string, profile: string }> = []
  const profile = SNAPSHOT_PROFILE.name
  const init = primary.readContext('mirror-history', { signal })
  for await (const publish of walkHistory(primary.home, head, store.manifestCache, init)) {
    if (publish.entry.cid !== head && walked.has(publish.entry.cid)) break
    // Segments before their manifest, as a publish logs them: a manifest on the mirror restores.
    for (const device of publish.manifest?.devices ?? []) for (const segment of device.segments) objects.push({ cid: segment.cid, profile })
    objects.push({ cid: publish.entry.cid, profile })
  }
  return log.logHistory(objects, head)
}
