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
 * closed while a read may use it (only {@link close}, once the service stops).
 */
export class PackReaders {
  private readonly open = new Map<number, number>()

  constructor (private readonly dir: string, private readonly pathOf: (pack: number) => string) {}

  /** `place`'s bytes (`name` is its block, for errors): read into `into` when it fits (a view of it answered), else into a new buffer. */
  async read (place: Place, name: string, into?: Uint8Array): Promise<Uint8Array> {
    const bytes = into !== undefined && into.byteLength >= place.length ? into.subarray(0, place.length) : Buffer.allocUnsafe(place.length)
    const { fd, once } = this.descriptor(place.pack, name)
    let bytesRead: number
    try {
      ({ bytesRead } = await readAt(fd, bytes, 0, place.length, place.offset))
    } finally {
      if (once) closeSync(fd)
    }
    if (bytesRead !== place.length) throw new ServiceDataDamagedError(`pack ${place.pack} is shorter than its index says (block ${name}): the service's data dir is damaged; restore it from a backup, or publish again from a device that holds the files`)
    return bytes
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
      reads.push(this.read({ pack: first.place.pack, offset: first.place.offset, length: span.byteLength }, first.name, span).then(() => {}))
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

  close (): void {
    for (const fd of this.open.values()) closeSync(fd)
    this.open.clear()
  }

  private descriptor (pack: number, block: string): { fd: number, once: boolean } {
    const kept = this.open.get(pack)
    if (kept !== undefined) return { fd: kept, once: false }
    let fd: number
    try {
      fd = openSync(this.pathOf(pack), 'r')
    } catch (err) {
      // Indexed, so its pack was written and fsynced: gone means the data dir lost it.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      throw new ServiceDataDamagedError(`pack ${pack} is missing from ${this.dir} though its index names it (block ${block}): the service's data dir is damaged; restore it from a backup, or publish again from a device that holds the files`, { cause: err })
    }
    if (this.open.size >= MAX_READERS) return { fd, once: true }
    this.open.set(pack, fd)
    return { fd, once: false }
  }
}
