import { rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { ContentIntegrityError } from '../errors.js'
import { MAX_OBJECT_BYTES } from './layout.js'
import { checkedCid, type ObjectMemory } from './object-memory.js'
import type { SealPool } from './seal-pool.js'
import { fetchTempFor, fileKeyFor, placeFile, realDir, type FetchFileInit } from './fetch-file.js'

export interface UnsealFileInit extends Omit<FetchFileInit, 'objects'> {
  readonly memory: ObjectMemory
  readonly pool: SealPool
  /**
   * Reads an object as a stream of bytes each verified before it comes (the embedded service's
   * store, block by block: `GatewayClient.verifiedStream`). Given for a file whose objects are
   * its own parts: they are fed to the thread as they are read and never held whole.
   */
  readonly stream?: (cid: string, maxBytes: number, signal?: AbortSignal) => AsyncIterable<Uint8Array>
}

/** Slices of a streamed object with the thread at once: reading runs ahead of opening by this many blocks. */
const STREAM_AHEAD = 8
/** A streamed slice is copied into shared memory this large (a block of the profiles' chunk size) and reused; larger ones are sent as they are. */
const RING_SLOT_BYTES = 256 * 1024

/**
 * Feeds bytes `offset` to `offset + length` of a verified stream to the thread, a few slices in
 * flight; answers whether the stream held them all. Each slice goes through one of
 * {@link STREAM_AHEAD} slots of shared memory, reused once the thread has answered the slice in
 * it: the thread reads it in place instead of a copy made for every message.
 */
async function feedRange (chunks: AsyncIterable<Uint8Array>, offset: number, length: number, piece: (bytes: Uint8Array) => Promise<void>): Promise<boolean> {
  const end = offset + length
  const inFlight: Array<Promise<void>> = []
  const ring: Uint8Array[] = []
  let sentCount = 0
  let at = 0
  try {
    for await (const chunk of chunks) {
      const from = Math.max(offset, at)
      const to = Math.min(end, at + chunk.byteLength)
      at += chunk.byteLength
      if (to > from) {
        let slice = chunk.subarray(from - (at - chunk.byteLength), to - (at - chunk.byteLength))
        if (slice.byteLength <= RING_SLOT_BYTES) {
          // Slot k is used again by slice k + STREAM_AHEAD, sent only once slice k was answered (below).
          const slot = ring[sentCount % STREAM_AHEAD] ??= new Uint8Array(new SharedArrayBuffer(RING_SLOT_BYTES))
          slot.set(slice)
          slice = slot.subarray(0, slice.byteLength)
        }
        sentCount++
        const sent = piece(slice)
        // Awaited below in order; one left when the stream fails must not be unhandled.
        sent.catch(() => {})
        inFlight.push(sent)
        if (inFlight.length >= STREAM_AHEAD) await inFlight.shift()
      }
      if (at >= end) break
    }
  } catch (err) {
    // No slice is left with the thread behind the caller's back.
    await Promise.allSettled(inFlight)
    throw err
  }
  for (const sent of inFlight) await sent
  return at >= end
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
  // A streamed file holds nothing of memory's, and tells it nothing.
  const single = record.objects.length === 1 && init.stream === undefined
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
          if (init.stream !== undefined) {
            checkedCid(object)
            const whole = await feedRange(init.stream(object, maxBytes, init.signal), offset, length, async (slice) => { init.onBytes?.(await unsealer.piece(slice)) })
            if (!whole) throw new ContentIntegrityError(`the content record of ${row.cid.toString()} reads past the end of ${object}: damaged or forged`)
            continue
          }
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
