import { RemoteNetworkError, RemoteStatusError } from '../../errors.js'
import type { SyncService } from '../sync-components.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import { backoffMs, sleep } from '../../util/backoff.js'

/** The newest uploads looked at for one already made: a snapshot just sent is among the first. */
const RECENT_UPLOADS = 200
const ATTEMPTS = 4

/** Whether the account's newest uploads hold `cid` (one page or two of the listing, not all of it). */
export async function recentlyUploaded (clients: SyncService, cid: string, signal?: AbortSignal): Promise<boolean> {
  let looked = 0
  for await (const record of clients.files({ signal })) {
    if (record.cid === cid) return true
    if (++looked >= RECENT_UPLOADS) break
  }
  return false
}

function mayHaveArrived (err: unknown): boolean {
  return err instanceof RemoteNetworkError || (err instanceof RemoteStatusError && (err.status === 408 || err.status === 429 || err.status >= 500))
}

/** Uploads a file the listing did not hold; after a failure that may have arrived, looks again before sending it again. */
async function uploadAfterCheck (clients: SyncService, path: string, cid: string, signal?: AbortSignal): Promise<'uploaded' | 'reused'> {
  for (let attempt = 1; ; attempt++) {
    try {
      await clients.objects.put(path, SNAPSHOT_PROFILE, { signal, retry: false })
      return 'uploaded'
    } catch (err) {
      if (attempt >= ATTEMPTS || !mayHaveArrived(err)) throw err
      if (await recentlyUploaded(clients, cid, signal).catch(() => false)) return 'reused'
      await sleep(backoffMs({ firstMs: 1000, maxMs: 8000, jitter: 'spread' }, attempt), signal)
    }
  }
}

/**
 * Uploads a publish's files in order (segments, then the manifest), each once: those the newest
 * uploads already hold (an answer lost, a kill before the step was recorded) are reused. Answers
 * how many were reused.
 */
export async function uploadAll (clients: SyncService, files: ReadonlyArray<{ readonly path: string, readonly cid: string }>, signal?: AbortSignal): Promise<number> {
  const recent = new Set<string>()
  let looked = 0
  for await (const record of clients.files({ signal })) {
    recent.add(record.cid)
    if (++looked >= RECENT_UPLOADS) break
  }
  let reused = 0
  for (const file of files) {
    if (recent.has(file.cid)) { reused++; continue }
    if (await uploadAfterCheck(clients, file.path, file.cid, signal) === 'reused') reused++
  }
  return reused
}
