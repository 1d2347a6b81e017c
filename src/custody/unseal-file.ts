import { rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { ContentIntegrityError } from '../errors.js'
import type { ByteRange } from '../store/index.js'
import { MAX_OBJECT_BYTES } from './layout.js'
import { checkedCid, type ObjectMemory } from './object-memory.js'
import type { SealPool, UnsealInit, Unsealer } from './seal-pool.js'
import { fetchTempFor, fileKeyFor, realDir, type FetchFileInit } from './fetch-file.js'
import type { UnsealedFile } from './durable-batch.js'
import { defaultAttrs } from './file-attrs.js'

export interface UnsealFileInit extends Omit<FetchFileInit, 'objects'> {
  readonly memory: ObjectMemory
  readonly pool: SealPool
  /**
   * Reads an object as a stream of bytes each verified before it comes (the embedded service's
   * store, block by block: `GatewayClient.verifiedStream`). Given for a file whose objects are
   * its own parts: they are fed to the thread as they are read and never held whole. Each chunk
   * is copied or sent before the next is asked for, so a stream may lend its memory.
   */
  readonly stream?: (cid: string, maxBytes: number, signal?: AbortSignal, range?: ByteRange) => AsyncIterable<Uint8Array>
  /**
   * The file's bytes are read from its object by range through `stream` (a few files of a large
   * pack): only the blocks that hold them, never the whole object.
   */
  readonly byRange?: boolean
  /**
   * Only checked: the blob opened and its plaintext hashed to the row's CID, then let go. Nothing
   * is written and `target` is not used (a drill's `verify --content`).
   */
  readonly check?: boolean
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
 * What a sealing thread is asked to write for `init`'s file, after the record is checked against
 * its row; and where (empty names for a check, which writes nothing).
 */
export async function unsealJobOf (init: Omit<UnsealFileInit, 'memory' | 'pool'>): Promise<{ readonly dir: string, readonly expectedDir: string, readonly temp: string, readonly job: Omit<UnsealInit, 'whole'> }> {
  const { record, row } = init
  if (record.cid !== row.cid.toString() || record.size !== row.size) throw new ContentIntegrityError(`the content record for ${row.cid.toString()} describes ${record.cid} of ${record.size} bytes: forged`)
  if (record.sealing === 'none' || init.snapshotKey === undefined) throw new ContentIntegrityError(`${row.cid.toString()} is sealed and no key was given`)
  const key = fileKeyFor(init.snapshotKey, row.cid)
  const job = { key, cid: row.cid.toString(), cidBytes: ownBytes(row.cid.bytes), size: row.size, profile: row.profile.name, mtimeMs: row.mtimeMs }
  if (init.check === true) return { dir: '', expectedDir: '', temp: '', job: { ...job, path: null, mode: 0o600 } }
  const dir = dirname(init.target)
  const expectedDir = init.targetDir ?? await realDir(dir)
  const temp = fetchTempFor(init.target)
  // Private while it is written: its mode and owner come on its descriptor once it is verified.
  const attrs = init.attrs ?? defaultAttrs()
  return { dir, expectedDir, temp, job: { ...job, path: temp, mode: attrs.mode, uid: attrs.uid, gid: attrs.gid, dir: expectedDir } }
}

/** `bytes` alone: a view of a larger buffer would send all of it to the thread. */
function ownBytes (bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice()
}

/**
 * Brings one sealed file back as {@link fetchFile} does, its objects held in memory instead of
 * scratch files: each object verified against its CID (hashed in a sealing thread), the blob
 * opened, hashed and written to a temp file beside the target in a sealing thread. Answers the
 * temp only when its plaintext hashed to the row's CID (else it is removed and a
 * ContentIntegrityError names the file): its thread holds it open, and the caller makes it
 * durable and renames it with a {@link DurableBatch}. A record of one object reads it as a
 * shared object (a pack: every file read from it counted with `memory.expect`, and released
 * here, read or not); a record of several reads each part as its own.
 */
export async function unsealFile (init: UnsealFileInit): Promise<UnsealedFile> {
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
    const { dir, expectedDir, temp, job } = await unsealJobOf(init)
    try {
      let unsealer: Unsealer | undefined
      let written: { cid: string, inode: number }
      try {
        if (single) {
          // A file of a pack: its blob handed over whole, opened and ended in one message each way.
          const [object, offset, length] = record.objects[0] as readonly [string, number, number]
          const bytes = await memory.get(object, offset + length, Math.max(offset + length, MAX_OBJECT_BYTES), init.signal)
          if (offset + length > bytes.byteLength) throw new ContentIntegrityError(`the content record of ${row.cid.toString()} reads past the end of ${object}: damaged or forged`)
          reusable = false
          unsealer = init.pool.unseal({ ...job, whole: bytes.range(offset, length) }, init.signal)
          written = await unsealer.end()
          reusable = true
          releaseShared()
          if (written.cid === row.cid.toString()) init.onBytes?.(row.size)
        } else {
          const parts = init.pool.unseal(job, init.signal)
          unsealer = parts
          for (const [object, offset, length] of record.objects) {
            // A sealed object is never larger than a part; the expected length is where the blob ends.
            const maxBytes = Math.max(offset + length, MAX_OBJECT_BYTES)
            if (init.stream !== undefined) {
              checkedCid(object)
              // Sent first, then told: `onBytes?.(await ...)` would skip the send where no one listens.
              const piece = async (slice: Uint8Array): Promise<void> => { const opened = await parts.piece(slice); init.onBytes?.(opened) }
              const whole = init.byRange === true
                ? await feedRange(init.stream(object, maxBytes, init.signal, { offset, length }), 0, length, piece)
                : await feedRange(init.stream(object, maxBytes, init.signal), offset, length, piece)
              if (!whole) throw new ContentIntegrityError(`the content record of ${row.cid.toString()} reads past the end of ${object}: damaged or forged`)
              continue
            }
            const held = await memory.own(object, length, maxBytes, init.signal)
            try {
              if (offset + length > held.bytes.byteLength) throw new ContentIntegrityError(`the content record of ${row.cid.toString()} reads past the end of ${object}: damaged or forged`)
              // Every slab handed over at once (the thread answers each in order, progress moving as it writes).
              reusable = false
              await Promise.all(held.bytes.range(offset, length).map(async (slice) => { const opened = await parts.piece(slice); init.onBytes?.(opened) }))
              reusable = true
            } finally {
              held.drop(reusable)
            }
          }
          written = await parts.end()
        }
      } finally {
        // Its file is gone before this file's answer (a run that ends right after removes nothing left behind).
        await unsealer?.cancel()
      }
      if (written.cid !== row.cid.toString()) throw new ContentIntegrityError(`the stored content of ${row.cid.toString()} hashes to ${written.cid}: damaged or forged, nothing written`)
      return { job: (unsealer as Unsealer).id, temp, target: init.target, dir, expectedDir, inode: written.inode, size: row.size, replace: init.replace === true }
    } catch (err) {
      if (temp !== '') await rm(temp, { force: true })
      throw err
    }
  } finally {
    releaseShared()
  }
}
