import type { Config } from '../../config/index.js'
import type { Index, KnownDevice } from '../../index/index.js'
import type { SearchCache } from '../../find/index.js'
import type { Repository } from '../../sync/index.js'
import { safeText } from '../safe-text.js'
import { formatCount } from '../format.js'

/** `1a2b3c4d laptop`: a device as the find commands print it, hostname neutralised. */
export function deviceLabel (deviceId: string, devices: readonly KnownDevice[]): string {
  const hostname = devices.find(d => d.id === deviceId)?.hostname ?? ''
  return `${deviceId.slice(0, 8)}${hostname === '' ? '' : ` ${safeText(hostname)}`}`
}

/** `2026-11-24 13:05:00Z`. */
export function shortTime (ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z')
}

/**
 * Runs `fn` with the index (read-only: a daemon may be writing it) and its search cache caught
 * up; both are closed after. `indexFile`/`searchFile`: a past publish's instead of the state dir's.
 */
export async function withSearch<T> (config: Config, fn: (index: Index, cache: SearchCache) => T | Promise<T>, files?: { indexFile: string, searchFile: string }): Promise<T> {
  const { indexPath, openIndex } = await import('../../index/index.js')
  const { SearchCache, openSearchCache } = await import('../../find/index.js')
  const index = openIndex(files?.indexFile ?? indexPath(config.stateDir), { readonly: true })
  try {
    const cache = files === undefined ? openSearchCache(config.stateDir) : new SearchCache(files.searchFile)
    try {
      const caught = cache.catchUp(index)
      if (caught.rebuilt && caught.rows > 100_000) process.stderr.write(`cidsync: built the search cache (${formatCount(caught.rows)} rows); later searches only read what changed\n`)
      return await fn(index, cache)
    } finally {
      cache.close()
    }
  } finally {
    index.close()
  }
}

/** The publish the pointer of the chain asked holds: where a walk of its history starts. */
export async function historyStart (repository: Repository, options: { namespace?: string, network?: string }): Promise<string> {
  const pointer = await repository.pointers.current(options.namespace ?? repository.config.namespace, options.network ?? repository.config.network)
  return pointer.snapshotCid
}
