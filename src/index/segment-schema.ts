import Database from 'better-sqlite3'
import type { Database as Db } from 'better-sqlite3'
import { MIGRATIONS } from './migrations.js'

interface SchemaObject { readonly type: string, readonly name: string, readonly sql: string | null }

const references = new Map<number, SchemaObject[]>()

/** The schema the migrations make up to `version`, from an empty database in memory (made once per version). */
function referenceSchema (version: number): SchemaObject[] {
  let objects = references.get(version)
  if (objects === undefined) {
    const db = new Database(':memory:')
    try {
      for (const step of MIGRATIONS.slice(0, version)) step(db)
      objects = schemaOf(db)
    } finally {
      db.close()
    }
    references.set(version, objects)
  }
  return objects
}

function schemaOf (db: Db): SchemaObject[] {
  return db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").all() as SchemaObject[]
}

/** Tables whose rows a segment carries; every other table of the index schema must be empty. */
const CARRIED = new Set(['entries', 'devices', 'live_counts', 'content'])

/**
 * What is wrong with a segment database beyond its rows of `entries`, or nothing: its schema must
 * be exactly what the index's migrations make at its version (an index may be left out, nothing
 * added: no trigger, no view, no loosened column), `devices` must hold only its device at `to`,
 * and every other table must be empty. A restore adopts the largest base's file as the new index,
 * so anything else in it would become part of this device's index.
 */
export function segmentSchemaProblems (db: Db, deviceId: string, to: number): string[] {
  const version = db.pragma('user_version', { simple: true }) as number
  if (!Number.isSafeInteger(version) || version < 1 || version > MIGRATIONS.length) return [`schema version ${version}`]
  const problems: string[] = []
  const wanted = new Map(referenceSchema(version).map(o => [`${o.type} ${o.name}`, o.sql]))
  const found = schemaOf(db)
  for (const object of found) {
    const key = `${object.type} ${object.name}`
    if (!wanted.has(key)) problems.push(`an extra ${object.type} ${object.name}`)
    else if (wanted.get(key) !== object.sql) problems.push(`${object.type} ${object.name} declared otherwise than the index schema`)
  }
  const foundKeys = new Set(found.map(o => `${o.type} ${o.name}`))
  for (const key of wanted.keys()) if (!key.startsWith('index ') && !foundKeys.has(key)) problems.push(`no ${key}`)
  if (problems.length > 0) return problems
  const devices = db.prepare('SELECT device_id, last_seq FROM devices').all() as Array<{ device_id: string, last_seq: number }>
  if (devices.length !== 1 || devices[0]?.device_id !== deviceId || devices[0]?.last_seq !== to) problems.push(`devices holds ${devices.length} rows, not only this device at ${to}`)
  for (const { name } of found.filter(o => o.type === 'table' && !CARRIED.has(o.name))) {
    if ((db.prepare(`SELECT COUNT(*) FROM "${name}"`).pluck().get() as number) > 0) problems.push(`rows in ${name}`)
  }
  if (foundKeys.has('table live_counts')) {
    const counts = db.prepare('SELECT device_id, live FROM live_counts').all() as Array<{ device_id: string, live: number }>
    if (counts.some(c => c.device_id !== deviceId)) problems.push('live counts of another device')
  }
  return problems
}
