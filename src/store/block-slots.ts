/** What a slot holds at first: a leaf of the 256 KiB-chunk profiles and its node. */
const FIRST_SLOT_BYTES = 256 * 1024

/**
 * Buffers an export reads its blocks into, each given back once its block is in the CAR, so a
 * GiB is read through a dozen buffers instead of 4,096 new ones: their freeing made V8 mark the
 * whole heap again and again (a quarter of the export's CPU: docs/benchmarks.md, Exits, third
 * pass). Slots grow to the largest block seen (1 MiB leaves of `unixfs-v1-2025`). Memory: at most
 * `keep` slots held, plus those lent.
 */
export class BlockSlots {
  private readonly free: Uint8Array[] = []
  private out = 0
  /** `size`: what a slot holds at first. */
  constructor (private readonly keep: number, private size = FIRST_SLOT_BYTES) {}

  /** A slot to read a block into: the caller owns it until it gives it back (or drops it). */
  take (): Uint8Array {
    this.out++
    return this.free.pop() ?? new Uint8Array(this.size)
  }

  /** Slots taken and not given back yet. */
  get lent (): number {
    return this.out
  }

  /** A block did not fit: later slots are made this large. */
  grow (bytes: number): void {
    if (bytes > this.size) this.size = bytes
  }

  /** Gives back the slot a block was read into (`block` views it, from its start); one too small is dropped. */
  give (block: Uint8Array): void {
    this.out = Math.max(0, this.out - 1)
    const slot = new Uint8Array(block.buffer as ArrayBuffer)
    if (slot.byteLength >= this.size && this.free.length < this.keep) this.free.push(slot)
  }
}
