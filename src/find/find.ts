import type { Entry, Index } from '../index/index.js'
import type { CachedRow, SearchCache } from './search-cache.js'
import { parsePattern, type Pattern } from './pattern.js'
import { storedState, type ContentActivity, type StoredState } from './stored-state.js'

export interface FindQuery {
  readonly pattern: string
  /** Only this device's rows; every device's when absent. */
  readonly deviceId?: string
  /** Tombstones too (files deleted since). */
  readonly includeDeleted?: boolean
  /** Take `*` and `?` as plain characters. */
  readonly literal?: boolean
  /** At most this many results (default 50). */
  readonly limit?: number
}

/** A row that matched: the file as that device last saw it, and whether its content is stored. */
export interface Found extends Pick<Entry, 'deviceId' | 'folder' | 'path' | 'size' | 'mtimeMs' | 'cid' | 'deleted' | 'updatedAt'> {
  readonly stored: StoredState
}

export interface FindResult {
  readonly results: Found[]
  /** More rows matched than were ranked or shown: narrow the pattern or raise the limit. */
  readonly more: boolean
  readonly pattern: Pattern['kind']
}

/** How many matching rows are ranked at most: a pattern that matches most of the index stays fast. */
export const MAX_CANDIDATES = 5_000
export const DEFAULT_FIND_LIMIT = 50

const FILTERS = '(@device IS NULL OR r.device_id = @device) AND (@deleted = 1 OR r.deleted = 0)'

function candidates (cache: SearchCache, pattern: Pattern, query: FindQuery, cap: number): CachedRow[] {
  const params = { device: query.deviceId ?? null, deleted: query.includeDeleted === true ? 1 : 0, cap }
  const test = pattern.kind === 'substring'
    ? (pattern.ftsPhrase !== undefined ? '1' : 'instr(lower(r.text), lower(@text)) > 0')
    : "(lower(r.text) GLOB @glob OR lower(r.text) GLOB '*/' || @glob)"
  const from = pattern.ftsPhrase !== undefined ? 'rows_fts f JOIN rows r ON r.id = f.rowid' : 'rows r'
  const fts = pattern.ftsPhrase !== undefined ? 'rows_fts MATCH @phrase AND' : ''
  const sql = `SELECT r.id, r.device_id, r.folder, r.path, r.size, r.mtime_ms, r.cid, r.deleted, r.seq, r.updated_at FROM ${from} WHERE ${fts} ${test} AND ${FILTERS} LIMIT @cap`
  return cache.db.prepare(sql).all({
    ...params, ...(pattern.ftsPhrase !== undefined ? { phrase: pattern.ftsPhrase } : {}),
    ...(pattern.kind === 'glob' ? { glob: pattern.sqlGlob } : pattern.ftsPhrase === undefined ? { text: pattern.text } : {})
  }) as CachedRow[]
}

/** Lower is better: the name itself before a folder that holds the text, live before deleted, short before long. */
function score (row: CachedRow, pattern: Pattern): number {
  const name = (row.path.slice(row.path.lastIndexOf('/') + 1)).toLowerCase()
  const text = pattern.text.toLowerCase()
  const tier = pattern.kind === 'glob'
    ? (pattern.regex.test(name) ? 1 : 2)
    : name === text ? 0 : name.startsWith(text) ? 1 : name.includes(text) ? 2 : 3
  return tier * 1e6 + row.deleted * 1e5 + Math.min(row.folder.length + row.path.length, 99_999)
}

/**
 * Rows whose `folder/path` holds the pattern (see {@link parsePattern}), every device's unless
 * one is named, ranked: the file's own name matching first, then live before deleted, shorter
 * paths, newer files. The cache must have caught up first. `activity`: this device's uploads
 * and failures, for the stored state of its own rows.
 */
export function find (cache: SearchCache, index: Index, query: FindQuery, activity?: ContentActivity): FindResult {
  const pattern = parsePattern(query.pattern, { literal: query.literal })
  const limit = query.limit ?? DEFAULT_FIND_LIMIT
  const rows = candidates(cache, pattern, query, Math.max(MAX_CANDIDATES, limit + 1))
  const ranked = rows.map(row => ({ row, score: score(row, pattern) }))
    .sort((a, b) => a.score - b.score || b.row.mtime_ms - a.row.mtime_ms || (a.row.folder + a.row.path < b.row.folder + b.row.path ? -1 : 1))
  const results = ranked.slice(0, limit).map(({ row }): Found => ({
    deviceId: row.device_id, folder: row.folder, path: row.path, size: row.size, mtimeMs: row.mtime_ms, cid: row.cid,
    deleted: row.deleted === 1, updatedAt: row.updated_at, stored: storedState(index, row.cid, { deviceId: row.device_id, folder: row.folder, path: row.path, size: row.size }, activity)
  }))
  return { results, more: rows.length > limit, pattern: pattern.kind }
}
