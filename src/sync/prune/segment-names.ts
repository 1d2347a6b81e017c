import Database from 'better-sqlite3'
import { join } from 'node:path'
import type { Manifest, SegmentRef } from '../../snapshot/index.js'
import { fetchSegments, fetchV1Snapshot, removeDatabase, removeFetched, type FetchInit } from '../read/index.js'
import type { Repository } from '../repository.js'
import { objectCidsOf } from '../../custody/index.js'

/** Segments fetched and opened at a time: the disk holds at most this many. */
const AT_ONCE = 8

/** One row of an index database, as much as a prune needs: which file a path held from which sequence. */
export interface NamedRow {
  readonly device: string
  readonly folder: string
  readonly path: string
  readonly seq: number
  readonly cid: string | null
  readonly deleted: number
}

/** A batch of what one index database names: rows, and content records with their objects. */
export interface Named {
  readonly rows: NamedRow[]
  readonly records: Array<{ readonly cid: string, readonly objects: string[] }>
  /** A `/1` snapshot: every row it holds is live, whatever its sequence. */
  readonly whole: boolean
}

/** Rows or records handed on at a time: a base segment holds every row of its device. */
const BATCH = 10_000

/**
 * Hands `each` the file CIDs and content records of an index database (a segment or a `/1`
 * snapshot), {@link BATCH} at a time, so memory stays flat however many rows it holds.
 */
export function namesIn (path: string, each: (named: Named) => void, whole = false): void {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    let rows: NamedRow[] = []
    for (const row of db.prepare('SELECT device_id AS device, folder, path, seq, cid, deleted FROM entries').iterate() as IterableIterator<NamedRow>) {
      rows.push(row)
      if (rows.length === BATCH) { each({ rows, records: [], whole }); rows = [] }
    }
    if (rows.length > 0) each({ rows, records: [], whole })
    // A segment from before content records has no table for them.
    const hasContent = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'content'").pluck().get() !== undefined
    if (!hasContent) return
    let records: Named['records'] = []
    for (const r of db.prepare('SELECT cid, objects FROM content').iterate() as IterableIterator<{ cid: string, objects: string }>) {
      records.push({ cid: r.cid, objects: objectCidsOf(r.objects) })
      if (records.length === BATCH) { each({ rows: [], records, whole }); records = [] }
    }
    if (records.length > 0) each({ rows: [], records, whole })
  } finally {
    db.close()
  }
}


/**
 * Hands `each` what every segment of the manifests names, in batches, a few segments fetched
 * (verified, opened, checked) at a time and removed after; and what each `/1` snapshot names.
 */
export async function readNames (repository: Repository, manifests: readonly Manifest[], v1: readonly string[], fetch: FetchInit, each: (named: Named) => void): Promise<number> {
  const seen = new Set<string>()
  const wanted: Array<{ deviceId: string, segment: SegmentRef }> = []
  for (const manifest of manifests) {
    for (const device of manifest.devices) {
      for (const segment of device.segments) {
        if (seen.has(segment.cid)) continue
        seen.add(segment.cid)
        wanted.push({ deviceId: device.deviceId, segment })
      }
    }
  }
  for (let i = 0; i < wanted.length; i += AT_ONCE) {
    const databases = await fetchSegments(repository.home, wanted.slice(i, i + AT_ONCE), fetch)
    try {
      for (const path of databases.values()) namesIn(path, each)
    } finally {
      await removeFetched(databases)
    }
  }
  for (const cid of v1) {
    const path = join(fetch.dir, `${fetch.label}-${process.pid}-v1.sqlite`)
    try {
      await fetchV1Snapshot(repository.home, cid, path, fetch)
      namesIn(path, each, true)
    } finally {
      await removeDatabase(path)
    }
  }
  return wanted.length + v1.length
}
