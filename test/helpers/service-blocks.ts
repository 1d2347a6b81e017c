import { closeSync, openSync, readSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { CID } from 'multiformats/cid'

/**
 * The local service's stored blocks seen from outside, as a test that damages them behind the
 * service's back needs (src/local-service/blocks.ts: pack files indexed in service.sqlite).
 */
interface Place { cid: Uint8Array, pack: number, offset: number, length: number }

function withDb<T> (serviceDir: string, use: (db: Database.Database) => T): T {
  const db = new Database(join(serviceDir, 'service.sqlite'))
  try {
    db.pragma('busy_timeout = 5000')
    return use(db)
  } finally {
    db.close()
  }
}

const packPath = (serviceDir: string, pack: number): string => join(serviceDir, 'packs', `${String(pack).padStart(8, '0')}.pack`)

function placeOf (serviceDir: string, cid: string): Place {
  const place = withDb(serviceDir, db => db.prepare('SELECT cid, pack, offset, length FROM blocks WHERE cid = ?').get(CID.parse(cid).toV1().bytes) as Place | undefined)
  if (place === undefined) throw new Error(`block ${cid} is not stored in ${serviceDir}`)
  return place
}

/** How many blocks the service holds. */
export function storedBlockCount (serviceDir: string): number {
  return withDb(serviceDir, db => db.prepare('SELECT count(*) FROM blocks').pluck().get() as number)
}

/** Every stored block's CID (v1). */
export function storedBlocks (serviceDir: string): string[] {
  return withDb(serviceDir, db => (db.prepare('SELECT cid FROM blocks').pluck().all() as Uint8Array[]).map(bytes => CID.decode(bytes).toString()))
}

/** A stored block's bytes, read from its pack behind the service's back. */
export function readStoredBlock (serviceDir: string, cid: string): Buffer {
  const place = placeOf(serviceDir, cid)
  const bytes = Buffer.alloc(place.length)
  const fd = openSync(packPath(serviceDir, place.pack), 'r')
  try {
    readSync(fd, bytes, 0, place.length, place.offset)
  } finally {
    closeSync(fd)
  }
  return bytes
}

/** XORs one byte of a stored block (its middle, or its last) with `mask`. */
export function flipStoredBlock (serviceDir: string, cid: string, where: 'middle' | 'last' = 'middle', mask = 0x01): void {
  const place = placeOf(serviceDir, cid)
  if (place.length === 0) return
  const at = place.offset + (where === 'last' ? place.length - 1 : place.length >> 1)
  const fd = openSync(packPath(serviceDir, place.pack), 'r+')
  try {
    const byte = Buffer.alloc(1)
    readSync(fd, byte, 0, 1, at)
    byte[0] = (byte[0] as number) ^ mask
    writeSync(fd, byte, 0, 1, at)
  } finally {
    closeSync(fd)
  }
}

/** Makes a block vanish from the service; the function returned puts it back. */
export function hideStoredBlock (serviceDir: string, cid: string): () => void {
  const place = placeOf(serviceDir, cid)
  withDb(serviceDir, db => db.prepare('DELETE FROM blocks WHERE cid = ?').run(place.cid))
  return () => withDb(serviceDir, db => db.prepare('INSERT INTO blocks (cid, pack, offset, length) VALUES (?, ?, ?, ?)').run(place.cid, place.pack, place.offset, place.length))
}

/** The pack file holding a stored block (to remove, truncate or move it behind the service's back). */
export function storedBlockPack (serviceDir: string, cid: string): string {
  return packPath(serviceDir, placeOf(serviceDir, cid).pack)
}
