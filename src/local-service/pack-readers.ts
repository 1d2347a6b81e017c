import { closeSync, openSync, read } from 'node:fs'
import { promisify } from 'node:util'
import { ServiceDataDamagedError } from '../errors.js'

const readAt = promisify(read)

/** Pack descriptors kept open for reads; past them a pack is opened for each read. */
export const MAX_READERS = 256

/** Where a block lies: its pack, and its bytes there. */
export interface Place { readonly pack: number, readonly offset: number, readonly length: number }

/**
 * Reads blocks out of the packs (`BlockStore`'s read side). The first {@link MAX_READERS} packs
 * read keep their descriptor open (most are 1 GiB); the others are opened for each read, so a
 * store of many small packs (parts taken whole) never runs out of descriptors. None kept is
 * closed while a read may use it: a pack a reclaim removed ({@link forget}) is closed once its
 * reads are done, else at {@link close}, once the service stops.
 */
export class PackReaders {
  private readonly open = new Map<number, number>()
  /** Reads under way on each kept descriptor. */
  private readonly reading = new Map<number, number>()
  /** Descriptors forgotten while read: closed as their last read ends. */
  private readonly closing = new Set<number>()

  constructor (private readonly dir: string, private readonly pathOf: (pack: number) => string) {}

  /** `place`'s bytes (`name` is its block, for errors): read into `into` when it fits (a view of it answered), else into a new buffer. */
  async read (place: Place, name: string, into?: Uint8Array): Promise<Uint8Array> {
    checkPlace(place, name)
    const bytes = into !== undefined && into.byteLength >= place.length ? into.subarray(0, place.length) : Buffer.allocUnsafe(place.length)
    const { fd, once } = this.descriptor(place.pack, name)
    let bytesRead: number
    try {
      ({ bytesRead } = await readAt(fd, bytes, 0, place.length, place.offset))
    } finally {
      this.done(fd, once)
    }
    if (bytesRead !== place.length) throw shortPack(place.pack, name)
    return bytes
  }

  /** Blocks lying one after another in one pack, read into `into` (their total length) with one read; a short read names the first block it cut. */
  private async readSpan (blocks: ReadonlyArray<{ readonly place: Place, readonly name: string }>, into: Uint8Array): Promise<void> {
    const first = blocks[0] as { place: Place, name: string }
    const { fd, once } = this.descriptor(first.place.pack, first.name)
    let bytesRead: number
    try {
      ({ bytesRead } = await readAt(fd, into, 0, into.byteLength, first.place.offset))
    } finally {
      this.done(fd, once)
    }
    if (bytesRead === into.byteLength) return
    const cut = blocks.find(block => block.place.offset + block.place.length > first.place.offset + bytesRead) ?? first
    throw shortPack(first.place.pack, cut.name)
  }

  /**
   * Several blocks read at once, in order: those that fit go into `into` one after another, and
   * blocks lying next to each other in one pack (a file's leaves, as they were appended) are read
   * with one read, so a run of 256 KiB leaves costs a read per 4 MiB instead of one each. A block
   * past what `into` holds is read into memory of its own. Answers a view of each block's bytes.
   */
  async readRun (places: ReadonlyArray<{ readonly place: Place, readonly name: string }>, into: Uint8Array): Promise<Uint8Array[]> {
    const views: Uint8Array[] = []
    const reads: Array<Promise<void>> = []
    let used = 0
    for (const { place, name } of places) checkPlace(place, name)
    for (let i = 0; i < places.length;) {
      const first = places[i] as { place: Place, name: string }
      if (used + first.place.length > into.byteLength) {
        const own = this.read(first.place, first.name)
        const at = views.length
        views.push(new Uint8Array(0))
        reads.push(own.then(bytes => { views[at] = bytes }))
        i++
        continue
      }
      // The longest run of blocks that follow each other in the same pack and still fit.
      let end = first.place.offset + first.place.length
      let j = i + 1
      for (; j < places.length; j++) {
        const next = (places[j] as { place: Place }).place
        if (next.pack !== first.place.pack || next.offset !== end || used + (end - first.place.offset) + next.length > into.byteLength) break
        end += next.length
      }
      const span = into.subarray(used, used + (end - first.place.offset))
      for (let k = i; k < j; k++) {
        const place = (places[k] as { place: Place }).place
        views.push(span.subarray(place.offset - first.place.offset, place.offset - first.place.offset + place.length))
      }
      reads.push(this.readSpan(places.slice(i, j), span))
      used += span.byteLength
      i = j
    }
    await Promise.all(reads)
    return views
  }

  /** The pack being written: its own descriptor serves its reads until {@link close}. */
  keep (pack: number, fd: number): void {
    this.open.set(pack, fd)
  }

  /** The packs whose descriptors are kept open. */
  kept (): number[] {
    return [...this.open.keys()]
  }

  /** A pack removed: its kept descriptor is closed now, or as its last read ends. */
  forget (pack: number): void {
    const fd = this.open.get(pack)
    if (fd === undefined) return
    this.open.delete(pack)
    if ((this.reading.get(fd) ?? 0) > 0) this.closing.add(fd)
    else closeSync(fd)
  }

  close (): void {
    for (const fd of this.open.values()) closeSync(fd)
    for (const fd of this.closing) closeSync(fd)
    this.open.clear()
    this.closing.clear()
  }

  private done (fd: number, once: boolean): void {
    if (once) { closeSync(fd); return }
    const left = (this.reading.get(fd) ?? 1) - 1
    if (left > 0) { this.reading.set(fd, left); return }
    this.reading.delete(fd)
    if (this.closing.delete(fd)) closeSync(fd)
  }

  private descriptor (pack: number, block: string): { fd: number, once: boolean } {
    const kept = this.open.get(pack)
    if (kept !== undefined) {
      this.reading.set(kept, (this.reading.get(kept) ?? 0) + 1)
      return { fd: kept, once: false }
    }
    let fd: number
    try {
      fd = openSync(this.pathOf(pack), 'r')
    } catch (err) {
      // Indexed, so its pack was written and fsynced: gone means the data dir lost it.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      // `missingPack`: the block store looks the block up again, since a reclaim may have moved it.
      throw Object.assign(new ServiceDataDamagedError(`pack ${pack} is missing from ${this.dir} though its index names it (block ${block}): the service's data dir is damaged; restore it from a backup, or publish again from a device that holds the files`, { cause: err }), { missingPack: pack })
    }
    if (this.open.size >= MAX_READERS) return { fd, once: true }
    this.open.set(pack, fd)
    this.reading.set(fd, 1)
    return { fd, once: false }
  }
}

function shortPack (pack: number, block: string): ServiceDataDamagedError {
  return new ServiceDataDamagedError(`pack ${pack} is shorter than its index says (block ${block}): the service's data dir is damaged; restore it from a backup, or publish again from a device that holds the files`)
}

/**
 * No block the service stores is larger than this (leaves of 1 MiB at most, CAR blocks of 2 MiB):
 * an index row saying more is damage, named, not a read of gigabytes or a RangeError.
 */
export const MAX_STORED_BLOCK_BYTES = 8 * 1024 * 1024

function checkPlace (place: Place, name: string): void {
  if (Number.isSafeInteger(place.offset) && place.offset >= 0 && Number.isSafeInteger(place.length) && place.length >= 0 && place.length <= MAX_STORED_BLOCK_BYTES) return
  throw new ServiceDataDamagedError(`the service's index places block ${name} at offset ${place.offset}, ${place.length} bytes long in pack ${place.pack}: no stored block is that; the service's data dir is damaged; restore it from a backup, or publish again from a device that holds the files`)
}
