import { rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { ContentIntegrityError } from '../errors.js'
import { MAX_OBJECT_BYTES } from './layout.js'
import type { ObjectMemory } from './object-memory.js'
import type { SealPool } from './seal-pool.js'
import { fetchTempFor, fileKeyFor, placeFile, realDir, type FetchFileInit } from './fetch-file.js'

export interface UnsealFileInit extends Omit<FetchFileInit, 'objects'> {
  readonly memory: ObjectMemory
  readonly pool: SealPool
}

/**
 * Brings one sealed file back as {@link fetchFile} does, its objects held in memory instead of
 * scratch files: each object verified against its CID (hashed in a sealing thread), the blob
 * opened, hashed and written to a temp file beside the target in a sealing thread, fsynced, and
 * renamed into place only when its plaintext hashes to the row's CID. A record of one object
 * reads it as a shared object (a pack: every file read from it counted with `memory.expect`, and
 * released here, read or not); a record of several reads each part as its own.
 */
export async function unsealFile (init: UnsealFileInit): Promise<void> {
  const { record, row, memory } = init
  const single = record.objects.length === 1
  // Cleared while a slice is with a thread: a buffer given up then is not reused (it may still be read).
  let reusable = true
  let released = false
  const releaseShared = (): void => {
    if (single && !released) { released = true; memory.release(record.objects[0]?.[0] ?? '', reusable) }
  }
  try {
    if (record.cid !== row.cid.toString() || record.size !== row.size) throw new ContentIntegrityError(`the content record for ${row.cid.toString()} describes ${record.cid} of ${record.size} bytes: forged`)
    if (record.sealing === 'none' || init.snapshotKey === undefined) throw new ContentIntegrityError(`${row.cid.toString()} is sealed and no key was given`)
    const key = fileKeyFor(init.snapshotKey, row.cid)
    const dir = dirname(init.target)
    const expectedDir = init.targetDir ?? await realDir(dir)
    const temp = fetchTempFor(init.target)
    try {
      const unsealer = init.pool.unseal({ path: temp, key, cid: row.cid.toString(), size: row.size, profile: row.profile.name, mtimeMs: row.mtimeMs }, init.signal)
      let written: { cid: string, inode: number }
      try {
        for (const [object, offset, length] of record.objects) {
          // A sealed object is never larger than a part; the expected length is where the blob ends.
          const maxBytes = Math.max(offset + length, MAX_OBJECT_BYTES)
          const held = single ? { bytes: await memory.get(object, offset + length, maxBytes, init.signal), drop: releaseShared } : await memory.own(object, length, maxBytes, init.signal)
          try {
            if (offset + length > held.bytes.byteLength) throw new ContentIntegrityError(`the content record of ${row.cid.toString()} reads past the end of ${object}: damaged or forged`)
            // Every slab handed over at once (the thread answers each in order, progress moving as it writes).
            reusable = false
            await Promise.all(held.bytes.range(offset, length).map(async (slice) => { init.onBytes?.(await unsealer.piece(slice)) }))
            reusable = true
          } finally {
            held.drop(reusable)
          }
        }
        written = await unsealer.end()
      } finally {
        // Its file is gone before this file's answer (a run that ends right after removes nothing left behind).
        await unsealer.cancel()
      }
      if (written.cid !== row.cid.toString()) throw new ContentIntegrityError(`the stored content of ${row.cid.toString()} hashes to ${written.cid}: damaged or forged, nothing written`)
      await placeFile(temp, init.target, dir, expectedDir, written.inode)
    } catch (err) {
      await rm(temp, { force: true })
      throw err
    }
  } finally {
    releaseShared()
  }
}
