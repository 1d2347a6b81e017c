import { NotReadyError } from '../errors.js'
import type { SyncRunner } from '../sync/index.js'
import type { WatcherStatus } from '../watch/index.js'
import type { ServiceLink } from './service-link.js'

/**
 * The sync runner, or why there is none yet: a NotReadyError (503) that says what is awaited (the
 * scan and how many files it has left to hash, or the service and why it could not be reached,
 * which is then tried again at once).
 */
export function readyRunner (link: ServiceLink | undefined, waiting: WatcherStatus | undefined, what: string): SyncRunner {
  if (link?.runner !== undefined) return link.runner
  if (link?.error !== undefined) {
    link.wake()
    throw new NotReadyError(`not ready: ${what} waits for the service, which could not be reached: ${link.error}`, 5)
  }
  const toHash = waiting?.folders.reduce((n, f) => n + Math.max(0, f.toHash - f.hashed), 0) ?? 0
  const reason = waiting?.currentAt === undefined
    ? `the index is not current yet (scanning${toHash > 0 ? `, ${toHash} ${toHash === 1 ? 'file' : 'files'} to hash` : ''})`
    : 'the service is being reached'
  throw new NotReadyError(`not ready: ${what} starts once the index is current and the service is reached; now ${reason}`)
}

/**
 * Folders the watcher cannot read (removed, unmounted, unreadable), as a publish's answer names
 * them: the publish holds their files as the index last saw them, and `cidsync snapshot` must
 * not call that whole (it exits 1 naming each, as it does without a daemon).
 */
export function foldersInError (status: WatcherStatus | undefined): { foldersInError?: Array<{ folder: string, error: string }> } {
  const inError = status?.folders.filter(f => f.state === 'error').map(f => ({ folder: f.name, error: f.error ?? 'in error' })) ?? []
  return inError.length > 0 ? { foldersInError: inError } : {}
}
