/**
 * Finding files: search over every device's rows (now, or as a past publish saw them), where a
 * CID is held, duplicates, and one file's timeline across the history. Reads the index through
 * its face; keeps its own caches beside it (`search.sqlite`, `history-rows.sqlite`).
 */
import { join } from 'node:path'
import { SearchCache } from './search-cache.js'
import { HISTORY_ROWS_FILE, HistoryRows } from './history-rows.js'
import type * as Fill from './history-fill.js'
import { STATE_NAMES } from '../config/index.js'

export { SearchCache } from './search-cache.js'
export type { CatchUp } from './search-cache.js'
export { find, MAX_CANDIDATES, DEFAULT_FIND_LIMIT } from './find.js'
export type { FindQuery, Found, FindResult } from './find.js'
export { parsePattern } from './pattern.js'
export type { Pattern } from './pattern.js'
export { where } from './where.js'
export type { Holder, WhereResult } from './where.js'
export { dupes } from './dupes.js'
export type { DupeGroup, DupesResult } from './dupes.js'
export { fileLog, fileTimeline, splitPath } from './file-log.js'
export { checkPruned, heldByListing, MAX_VERSIONS_CHECKED } from './pruned-versions.js'
export type { CheckedVersion, HeldObjects } from './pruned-versions.js'
export type { FileVersion } from './file-log.js'
export { HistoryRows, HISTORY_ROWS_FILE, historyChainKey } from './history-rows.js'
export type { HistoryFill } from './history-fill.js'
export { storedState, contentState, fetchable, STORED_STATES } from './stored-state.js'
export type { StoredState, ContentState, ContentActivity, ContentFailureNote, StateOfFile } from './stored-state.js'

export const SEARCH_CACHE_FILE = STATE_NAMES.searchCache

/** The search cache of the state dir's index. */
export function openSearchCache (stateDir: string): SearchCache {
  return new SearchCache(join(stateDir, SEARCH_CACHE_FILE))
}

/** The kept history rows of the state dir. */
export function openHistoryRows (stateDir: string): HistoryRows {
  return new HistoryRows(join(stateDir, HISTORY_ROWS_FILE))
}
export { FindService, DAEMON_CATCH_UP_BUDGET } from './find-service.js'
export { browse, MAX_BROWSE_ROWS } from './browse.js'
export type { Listing } from './browse.js'

// The two that fetch from the history load the sync room only when called: the daemon, which
// loads it late (after its first scan), imports this face at start.

/** See {@link Fill.fillHistory}. */
export async function fillHistory (...args: Parameters<typeof Fill.fillHistory>): ReturnType<typeof Fill.fillHistory> {
  return await (await import('./history-fill.js')).fillHistory(...args)
}
