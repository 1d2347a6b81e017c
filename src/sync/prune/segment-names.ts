import Database from 'better-sqlite3'
import { join } from 'node:path'
import type { Manifest, SegmentRef } from '../../snapshot/index.js'
import { fetchSegments, fetchV1Snapshot, removeDatabase, removeFetched, type FetchInit } from '../read/index.js'
import type { Repository } from '../repository.js'

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

/** What one index database names: its rows, and each content record's objects. */
export interface Named {
  readonly rows: NamedRow[]
  readonly records: Array<{ readonly cid: string, readonly objects: string[] }>
  /** A `/1` snapshot: every row it holds is live, whatever its sequence. */
  readonly whole: boolean
}

/** Reads the file CIDs and content records of an index database (a segment or a `/1` snapshot). */
export function namesIn (path: string, whole = false): Named {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    const rows = db.prepare('SELECT device_id AS device, folder, path, seq, cid, deleted FROM entries').all() as NamedRow[]
    // A segment from before content records has no table for them.
    const hasContent = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'content'").pluck().get() !== undefined
    const records = hasContent
      ? (db.prepare('SELECT cid, objects FROM content').all() as Array<{ cid: string, objects: string }>).map(r => ({ cid: r.cid, objects: objectsOf(r.objects) }))
      : []
    return { rows, records, whole }
  } finally {
    db.close()
  }
}

/** The object CIDs of a record's `objects` JSON (`[[cid, offset, length], ...]`); none when it does not parse. */
function objectsOf (json: string): string[] {
  try {
    const parsed = JSON.parse(json) as unknown
    if (!Array.isArray(parsed)) return []
    return parsed.flatMap(part => Array.isArray(part) && typeof part[0] === 'string' ? [part[0]] : [])
  } catch {
    return []
  }
}

/**
 * Hands `each` what every segment of the manifests names, a few segments fetched (verified,
 * opened, checked) at a time and removed after; and what each `/1` snapshot names.
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
      for (const path of databases.values()) each(namesIn(path))
    } finally {
      await removeFetched(databases)
    }
  }
  for (const cid of v1) {
    const path = join(fetch.dir, `${fetch.label}-${process.pid}-v1.sqlite`)
    try {
      await fetchV1Snapshot(repository.home, cid, path, fetch)
      each(namesIn(path, true))
    } finally {
      await removeDatabase(path)
    }
  }
  return wanted.length + v1.length
}
