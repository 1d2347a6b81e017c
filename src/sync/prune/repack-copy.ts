import { HeldObject, SealPool, SLAB_BYTES } from '../../custody/index.js'
import { ContentNotFoundError, IntegrityError } from '../../errors.js'
import { CollectEvery } from '../../util/release-memory.js'
import { testKnob } from '../../util/test-knob.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import type { Repository } from '../repository.js'
import { NewPacks } from './new-packs.js'
import type { PlannedPack, RepackInit, RepackPlan, RepackProgress, Repacked } from './repack-types.js'

/**
 * One thread hashes the packs read, each slab while the next is read, and the packs made. Reading
 * the next pack ahead, or a second thread, took the repack's memory past the reading's peak.
 */
const REPACK_THREADS = 1

export interface CopyInit extends RepackInit {
  /** Where a new pack is written before it is stored (the prune's own dir). */
  readonly dir: string
  /** The most bytes a pack read may hold: a blob alone may be this long. */
  readonly maxPackBytes: number
  readonly signal?: AbortSignal
  readonly onProgress?: (event: RepackProgress) => void
}

/**
 * Copies the planned packs' live blobs, still sealed, into new packs, uploads each, then records
 * each moved blob's new place as this device's record of its file (its next sequence number).
 * Sealing is convergent, so the bytes are the same: any version of a file's record opens them.
 * Nothing is deleted here. The old pack goes at a later prune, once the pointer's chain holds the
 * new records: until then its newest record still names it. A kill before the records leaves an
 * upload no record names, noted: the next run makes it again, or marks it for a prune to delete.
 * Each old pack is read into
 * slabs used again for the next, each hashed on a thread while the next slab is read.
 */
export async function copyLiveBlobs (repository: Repository, plan: RepackPlan, init: CopyInit): Promise<Repacked> {
  // Counted as done, not as planned: a pack that cannot be read stays whole, and so does a blob whose record changed.
  let unread = 0
  const hashing = new SealPool(REPACK_THREADS)
  const packs = new NewPacks(repository, hashing, {
    ...init,
    maxBlobBytes: init.maxPackBytes,
    onStored: ({ made, bytes }) => { init.onProgress?.({ type: 'prune:repacked', detail: { packs: made, bytes } }) }
  })
  // One pack's slabs at a time, each used again for the next pack: no pack is copied whole.
  const slabs = new Slabs()
  // Reading and storing each pack leaves buffers V8 takes late.
  const collect = new CollectEvery()
  try {
    for (const pack of plan.packs) {
      const bytes = await packBytes(repository, pack, slabs, hashing, init.signal)
      // Gone, damaged, not the size listed, or a record reading past its end: that pack stays whole.
      if (bytes === undefined || pack.blobs.some(b => b.offset + b.length > Math.min(bytes.byteLength, pack.size))) {
        unread++
        continue
      }
      for (const blob of pack.blobs) await packs.add(bytes.range(blob.offset, blob.length), blob)
      slabs.giveBack(bytes)
      collect.note(pack.size)
    }
    await packs.finish()
  } finally {
    await packs.settle()
    await hashing.close()
  }
  const { blobs, bytes, made, from } = packs.counts
  const moved = plan.packs.filter(p => from.has(p.cid))
  return { blobs, bytes, unread, packs: moved.length, freed: moved.reduce((sum, p) => sum + p.dead, 0), made, waiting: plan.waiting, waitingBytes: plan.waitingBytes }
}

/** The size of the slabs a pack is read into. Tests make it small, so every blob spans several. */
const REPACK_SLAB_BYTES = testKnob('CIDSYNC_TEST_REPACK_SLAB', SLAB_BYTES)

/** The slabs packs are read into: those of a pack copied are filled again. */
class Slabs {
  private readonly spare: Uint8Array[] = []
  // Shared memory: the hashing thread reads a slab where it lies.
  readonly next = (): Uint8Array => this.spare.pop() ?? new Uint8Array(new SharedArrayBuffer(REPACK_SLAB_BYTES))
  /** A pack's slabs, once nothing more is read of it. */
  giveBack (held: HeldObject): void {
    for (const view of held.slabs) this.spare.push(new Uint8Array(view.buffer, 0, REPACK_SLAB_BYTES))
  }
}

/** The pack's bytes, verified; undefined when the store no longer holds it or it is not what was listed. */
async function packBytes (repository: Repository, pack: PlannedPack, slabs: Slabs, hashing: SealPool, signal?: AbortSignal): Promise<HeldObject | undefined> {
  try {
    return new HeldObject(await repository.objects.getBytes(pack.cid, SNAPSHOT_PROFILE, {
      maxBytes: pack.size, signal, slab: slabs.next, hash: async (filled) => await hashing.hashObject(filled, signal), hashing: () => hashing.hashStream(signal)
    }))
  } catch (err) {
    if (err instanceof ContentNotFoundError || err instanceof IntegrityError) return undefined
    throw err
  }
}
