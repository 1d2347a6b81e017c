import type { Config } from '../config/index.js'
import type { StatusDocument } from '../daemon/index.js'
import type { ContentActivity, ContentFailureNote } from '../find/index.js'
import { readDeviceId } from '../index/index.js'
import { safeText } from './safe-text.js'

/** A failure as the status document or the state dir holds it, parsed (it came from outside this process). */
function parseFailure (value: unknown): ContentFailureNote | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const v = value as Record<string, unknown>
  const text = (x: unknown): x is string => typeof x === 'string'
  if (!text(v.folder) || !text(v.path) || !text(v.code) || !text(v.message) || !text(v.since)) return undefined
  return { folder: v.folder, path: v.path, code: v.code, message: v.message, since: v.since, ...(text(v.advice) ? { advice: v.advice } : {}) }
}

function failuresOf (list: unknown): Map<string, ContentFailureNote> {
  const failed = new Map<string, ContentFailureNote>()
  for (const value of Array.isArray(list) ? list : []) {
    const f = parseFailure(value)
    if (f !== undefined) failed.set(`${f.folder}/${f.path}`, f)
  }
  return failed
}

/**
 * What this device is doing with content, for `cidsync ls` and `find`: from the running daemon's
 * status (what it uploads now, what failed), or, with no daemon, from what its last pass left in
 * the state dir (nothing uploads then). `source` says which, for the user.
 */
export async function contentActivity (config: Config): Promise<{ readonly activity: ContentActivity, readonly source: 'daemon' | 'state dir' }> {
  const { SyncStore, hasSyncState, contentLeftOut } = await import('../sync/index.js')
  const base = { deviceId: readDeviceId(config.stateDir), storing: new Set(config.folders.filter(f => f.store === true).map(f => f.name)), notStored: contentLeftOut(config) }
  const { getFromDaemon, somethingElseListens } = await import('./status-client.js')
  try {
    const status = JSON.parse(await getFromDaemon(config, '/status')) as Partial<StatusDocument>
    const content = status.content
    // Another state dir's daemon on the configured address is not this device's.
    if (status.device?.id === base.deviceId) {
      const uploading = new Set((Array.isArray(content?.uploading) ? content.uploading : []).map(u => `${String(u.folder)}/${String(u.path)}`))
      return { activity: { ...base, uploading, failed: failuresOf(content?.failures) }, source: 'daemon' }
    }
  } catch (err) {
    // No daemon: the state dir answers. A listener that is not one, or one that did not answer, is said.
    if (somethingElseListens(err)) process.stderr.write(`cidsync: ${safeText((err as Error).message)}; shown from the state dir instead\n`)
  }
  let failed = new Map<string, ContentFailureNote>()
  if (hasSyncState(config.stateDir)) {
    try {
      const store = new SyncStore(config.stateDir)
      try {
        failed = failuresOf(JSON.parse(store.contentFailures() ?? '[]'))
      } finally {
        store.close()
      }
    } catch {
      // An unreadable sync.sqlite hides only the failures; `cidsync status` says what is wrong with it.
    }
  }
  return { activity: { ...base, uploading: new Set(), failed }, source: 'state dir' }
}
