import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { PACK_MAX_BLOBS, PACK_MAX_BYTES, processUploadGate, type SealPool } from '../../custody/index.js'
import { failpoint } from '../../util/failpoint.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import type { Repository } from '../repository.js'
import type { Blob, MovedBlob, RepackInit } from './repack-types.js'

/** A new pack being filled in shared memory (its thread hashes it where it lies), and the blobs it holds. */
interface Filling { readonly bytes: Uint8Array, size: number, blobs: MovedBlob[] }

/**
 * The stored packs whose moves wait to be recorded, in bytes: they are recorded together, in one
 * transaction, which writes each index page their records share once. A kill before loses at most
 * these packs' records: they stay noted, and the rerun makes the same packs again.
 */
const RECORD_EVERY_BYTES = 256 * 1024 * 1024

/** What the records written so far moved. */
export interface MovedCounts { blobs: number, bytes: number, made: number, readonly from: Set<string> }

export interface NewPacksInit extends RepackInit {
  /** Where a new pack is written before it is stored (the prune's own dir). */
  readonly dir: string
  /** The longest blob a pack read may hold: any one fits a new pack alone. */
  readonly maxBlobBytes: number
  readonly signal?: AbortSignal
  readonly onStored?: (counts: Readonly<MovedCounts>) => void
}

/**
 * The new packs of a repack: blobs copied into one pack in memory, which is hashed on a thread
 * with its blocks, written to its spool file in one call and stored (the service in this process
 * takes those blocks without hashing them again). The moved blobs' new places are recorded once
 * {@link RECORD_EVERY_BYTES} of packs are stored, and at the end, in one transaction sorted by
 * file: a kill then leaves at most those packs named by no record, each noted for the rerun to
 * make again or a later prune to delete.
 */
export class NewPacks {
  readonly counts: MovedCounts = { blobs: 0, bytes: 0, made: 0, from: new Set() }
  private readonly spool: string
  private readonly gate: ReturnType<typeof processUploadGate>
  /** The pack being filled. */
  private filling: Filling
  /** The pack stored meanwhile, answering it once stored: its buffer is the next one filled. */
  private storing: Promise<Filling> | undefined
  /** Blobs stored and not yet recorded, with the pack each went into. */
  private unrecorded: Array<MovedBlob & { readonly object: string }> = []
  /** The bytes of the packs those blobs went into. */
  private unrecordedBytes = 0

  constructor (private readonly repository: Repository, private readonly hashing: SealPool, private readonly init: NewPacksInit) {
    // Named as the prune's own files: a run killed here leaves it for the next prune's sweep.
    this.spool = join(init.dir, `prune-${process.pid}-repack.pack`)
    this.gate = processUploadGate(repository.config.content.uploadRate, repository.config.content.concurrency)
    this.filling = this.newFilling()
  }

  private newFilling (): Filling {
    return { bytes: new Uint8Array(new SharedArrayBuffer(Math.max(PACK_MAX_BYTES, this.init.maxBlobBytes))), size: 0, blobs: [] }
  }

  /** Copies one blob (its views, in order) into the pack being filled; stores that pack first when the blob would not fit. */
  async add (views: readonly Uint8Array[], blob: Omit<MovedBlob, 'at'>): Promise<void> {
    if (this.filling.blobs.length > 0 && (this.filling.size + blob.length > PACK_MAX_BYTES || this.filling.blobs.length >= PACK_MAX_BLOBS)) await this.handOff()
    const { filling } = this
    const at = filling.size
    for (const view of views) {
      filling.bytes.set(view, filling.size)
      filling.size += view.byteLength
    }
    filling.blobs.push({ ...blob, at })
  }

  /**
   * Stores the full pack while the next is filled: its write and the store's fsync wait on the
   * disk, the reading of old packs mostly on the hashing thread. One store at a time, so the spool
   * file and the records keep their order; the next pack is filled in the buffer it frees.
   */
  private async handOff (): Promise<void> {
    const full = this.filling
    const next = this.storing === undefined ? this.newFilling() : await this.storing
    const storing = this.store(full).then(() => full)
    // Awaited by the next hand-off, `finish` or `settle`: never a rejection left unowned.
    storing.catch(() => {})
    this.storing = storing
    this.filling = next
  }

  /** Stores what is filled, records every blob left, and waits for all of it. */
  async finish (): Promise<void> {
    await this.storing
    this.storing = undefined
    if (this.filling.blobs.length > 0) await this.store(this.filling)
    this.record()
  }

  /**
   * Removes the spool file. A stored pack whose records failed to be written is tried once more,
   * so the next run need not copy it again; the run's own failure is what its caller throws.
   */
  async settle (): Promise<void> {
    // A store still running uses the spool file: it ends first, and its failure is the run's to throw.
    await this.storing?.catch(() => {})
    await rm(this.spool, { force: true })
    try {
      this.record()
    } catch {}
  }

  private async store (pack: Filling): Promise<void> {
    const { repository, init } = this
    const bytes = pack.bytes.subarray(0, pack.size)
    const { cid: expectedCid, blocks } = await this.hashing.hashObjectBlocks([bytes], init.signal)
    await rm(this.spool, { force: true })
    await writeNew(this.spool, bytes)
    // Noted before its upload, forgotten once its moves are recorded: a kill between the two
    // leaves a pack no record names, which a later prune deletes past the margin.
    const notes = repository.store.abandonedUploads
    notes.note([{ cid: expectedCid, kind: 'pack' }])
    const cid = await this.gate.slots.run(async () => (await repository.objects.put(this.spool, SNAPSHOT_PROFILE, {
      name: 'cidsync-pack.sealed', signal: init.signal, expectedCid, blocks, throttle: async (n, signal) => { await this.gate.bucket.take(n, signal) }
    })).cid, init.signal)
    // As a stored pack: logged for the mirrors, kept from any prune list read, a deal asked, before its records.
    repository.store.mirrorLog.logObjects([{ cid, profile: SNAPSHOT_PROFILE.name }])
    repository.store.pruneList.release(cid)
    if (repository.config.snapshot.deal && repository.deals !== undefined) {
      await repository.deals.addCid(cid, { signal: init.signal })
      init.index.remote.requestDeal(cid, init.deviceId)
    }
    if (cid !== expectedCid) notes.note([{ cid, kind: 'pack' }])
    failpoint('prune:repack-stored')
    await rm(this.spool, { force: true })
    for (const blob of pack.blobs) this.unrecorded.push({ ...blob, object: cid })
    this.unrecordedBytes += pack.size
    pack.blobs = []
    pack.size = 0
    if (this.unrecordedBytes >= RECORD_EVERY_BYTES) this.record()
  }

  /**
   * Records each stored blob's new place, sorted by file, in one transaction. A record that
   * changed since the plan (the file stored again meanwhile) is left as it is: the new pack then
   * holds a blob nobody names.
   */
  private record (): void {
    if (this.unrecorded.length === 0) return
    const moved = this.unrecorded.sort((a, b) => a.file < b.file ? -1 : a.file > b.file ? 1 : 0)
    const { init, counts } = this
    const moves = moved.map(m => ({ cid: m.file, from: placeOf(m), to: JSON.stringify([[m.object, m.at, m.length]]) }))
    const done = init.index.contentMoves.move(init.deviceId, init.hostname, moves)
    const still = moved.filter((_, i) => done.has(moves[i] as (typeof moves)[number]))
    // Let go only once written: after a failed write, `settle` tries them again.
    this.unrecorded = []
    this.unrecordedBytes = 0
    const objects = new Set<string>()
    for (const m of still) {
      counts.blobs++
      counts.bytes += m.length
      counts.from.add(m.pack)
      objects.add(m.object)
    }
    counts.made += objects.size
    failpoint('prune:repack-recorded')
    // A pack none of whose moves still stand stays noted: nobody names it, so a prune deletes it.
    this.repository.store.abandonedUploads.forget([...objects])
    init.onStored?.(counts)
  }
}

/** Writes `bytes` as the new file `path`, 0600 from its creation: it holds sealed content. */
async function writeNew (path: string, bytes: Uint8Array): Promise<void> {
  const file = await open(path, 'wx', 0o600)
  try {
    for (let done = 0; done < bytes.byteLength;) done += (await file.write(bytes, done, bytes.byteLength - done, done)).bytesWritten
  } finally {
    await file.close()
  }
}

/** The objects JSON of a record whose file is `blob` alone, where the plan found it. */
export function placeOf (blob: Blob): string {
  return JSON.stringify([[blob.pack, blob.offset, blob.length]])
}
