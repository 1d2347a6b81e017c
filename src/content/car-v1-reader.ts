import type { FileHandle } from 'node:fs/promises'
import { bytesReader, readHeader } from '@ipld/car/decoder'
import { varint } from 'multiformats'
import { CID } from 'multiformats/cid'
import { InternalError } from '../errors.js'
import { CarSectionError, MAX_CAR_HEADER_BYTES, V2_PRAGMA } from './car-sections.js'

/** Room for a section's CID in front of its block. */
const CID_ROOM = 4096
/** A varint of a CAR is at most this long. */
const VARINT_ROOM = 10

/** Where a CAR's bytes come from: a positional read into the reader's buffer; 0 at the end. */
export interface CarByteSource {
  read: (into: Buffer, offset: number, length: number, position: number) => Promise<number>
}

/** A file read where the reader asks. */
export function fileSource (handle: FileHandle): CarByteSource {
  return { read: async (into, offset, length, position) => (await handle.read(into, offset, length, position)).bytesRead }
}

/**
 * A stream's chunks copied into the reader's buffer as it asks (one copy a byte, where
 * `@ipld/car`'s iterator made a new buffer for every chunk and copied into it again). The position
 * is ignored: a stream is read in order. Until {@link forget} it remembers what it handed over, so
 * that a CARv2 (which {@link CarV1Reader} does not read) can be {@link replay}ed whole to another
 * reader.
 */
export class ChunkSource implements CarByteSource {
  private chunk: Uint8Array | undefined
  private given: Uint8Array[] | undefined = []
  private readonly chunks: AsyncIterator<Uint8Array>

  constructor (source: AsyncIterable<Uint8Array>) {
    this.chunks = source[Symbol.asyncIterator]()
  }

  async read (into: Buffer, offset: number, length: number): Promise<number> {
    while (this.chunk === undefined || this.chunk.byteLength === 0) {
      const next = await this.chunks.next()
      if (next.done === true) return 0
      this.chunk = next.value
    }
    const n = Math.min(length, this.chunk.byteLength)
    into.set(this.chunk.subarray(0, n), offset)
    this.given?.push(this.chunk.subarray(0, n))
    this.chunk = this.chunk.subarray(n)
    return n
  }

  /** The header was read: nothing is replayed (what was remembered is let go). */
  forget (): void {
    this.given = undefined
  }

  /** Every byte of the stream from its start: what was handed over, then what was not read yet. */
  async * replay (): AsyncGenerator<Uint8Array> {
    if (this.given === undefined) throw new InternalError('a CAR stream was replayed after its header was read as a CARv1')
    yield * this.given
    this.given = undefined
    if (this.chunk !== undefined && this.chunk.byteLength > 0) yield this.chunk
    this.chunk = undefined
    for (;;) {
      const next = await this.chunks.next()
      if (next.done === true) return
      yield next.value
    }
  }
}

/** A block of a CAR: its CID its own, its bytes a view of the reader's buffer, valid until the next one is asked for. */
export interface CarSection { readonly cid: CID, readonly bytes: Uint8Array }

/**
 * A CARv1 read section by section through one buffer used again and again: each block is handed
 * over as a view of it, never copied. Copying every byte into new memory, and freeing it, costs a
 * scan much of its time (docs/benchmarks.md, "Exits", third pass).
 * Bounds: the header ({@link MAX_CAR_HEADER_BYTES}) and each section (a block of `maxBlockBytes`
 * and its CID) are refused at their length, before anything of them is read; a CAR cut inside a
 * length or a section is refused. Memory: one buffer of `readBytes` plus the largest section
 * taken. A CARv2 is not read here ({@link open} answers undefined; a {@link ChunkSource}
 * replays what it took). Errors are {@link CarSectionError}s; the caller names the CAR.
 */
export class CarV1Reader {
  private start = 0
  private end = 0
  private eof = false
  /** Bytes of the source before the buffer's start. */
  private consumed = 0

  private constructor (private readonly source: CarByteSource, private readonly buffer: Buffer, private readonly readBytes: number, private readonly maxSection: number, readonly roots: CID[], private readonly signal?: AbortSignal) {}

  /** Reads the header: undefined for a CARv2 (its caller reads it another way). */
  static async open (source: CarByteSource, init: { readonly maxBlockBytes: number, readonly readBytes?: number, readonly signal?: AbortSignal }): Promise<CarV1Reader | undefined> {
    const readBytes = init.readBytes ?? 4 * 1024 * 1024
    const maxSection = init.maxBlockBytes + CID_ROOM
    const buffer = Buffer.allocUnsafeSlow(readBytes + Math.max(maxSection, MAX_CAR_HEADER_BYTES) + VARINT_ROOM)
    const reader = new CarV1Reader(source, buffer, readBytes, maxSection, [], init.signal)
    await reader.fill(VARINT_ROOM)
    const length = reader.varint()
    if (length === undefined) throw new CarSectionError('it is empty')
    if (length > MAX_CAR_HEADER_BYTES) throw new CarSectionError(`the CAR header announces ${length} bytes, more than the ${MAX_CAR_HEADER_BYTES} taken`)
    await reader.fill(length)
    if (reader.end - reader.start < length) throw new CarSectionError('it ends inside its header')
    // A CARv2's pragma: its caller reads it (@ipld/car's readHeader would read on past the pragma).
    if (length === V2_PRAGMA.byteLength && V2_PRAGMA.every((b, i) => buffer[reader.start + i] === b)) return undefined
    const bytes = bytesReader(buffer.subarray(0, reader.start + length))
    let header: Awaited<ReturnType<typeof readHeader>>
    try {
      header = await readHeader(bytes)
    } catch (err) {
      throw new CarSectionError((err as Error).message)
    }
    if (header.version !== 1) return undefined
    // The header's CIDs are kept by callers past the buffer's next use: their bytes made their own.
    reader.roots.push(...header.roots.map(root => CID.decode(root.bytes.slice())))
    reader.start = bytes.pos
    return reader
  }

  /** Reads until `need` bytes are in the buffer from its start, or the source ends. */
  private async fill (need: number): Promise<void> {
    while (this.end - this.start < need && !this.eof) {
      this.signal?.throwIfAborted()
      if (this.buffer.byteLength - this.end < this.readBytes) {
        // What is left of a section moves to the front: at most one section, never the file.
        this.buffer.copyWithin(0, this.start, this.end)
        this.consumed += this.start
        this.end -= this.start
        this.start = 0
      }
      const read = await this.source.read(this.buffer, this.end, Math.min(this.readBytes, this.buffer.byteLength - this.end), this.consumed + this.end)
      if (read === 0) this.eof = true
      this.end += read
    }
  }

  /** A varint at the buffer's start (read past), or undefined at the source's end. */
  private varint (): number | undefined {
    if (this.end === this.start) return undefined
    const window = this.buffer.subarray(this.start, Math.min(this.end, this.start + VARINT_ROOM))
    let length = 0
    while (length < window.byteLength && ((window[length] as number) & 0x80) !== 0) length++
    if (length >= 9) throw new CarSectionError('a CAR length prefix longer than 9 bytes')
    if (length === window.byteLength) throw new CarSectionError('the CAR ends inside a length prefix')
    const [value] = varint.decode(window)
    this.start += length + 1
    return value
  }

  /** The offset in the source of the next byte not read: after a section is answered, where it ends. */
  get position (): number {
    return this.consumed + this.start
  }

  /** Each block in turn; each answered block's bytes are read over once the next is asked for. */
  async * sections (): AsyncGenerator<CarSection> {
    for (;;) {
      await this.fill(VARINT_ROOM)
      const length = this.varint()
      if (length === undefined) return
      if (length > this.maxSection) throw new CarSectionError(`a CAR section announces ${length} bytes, more than a block of ${this.maxSection - CID_ROOM} bytes and its CID`)
      await this.fill(length)
      if (this.end - this.start < length) throw new CarSectionError('Unexpected end of data: the CAR ends inside a section')
      const section = this.buffer.subarray(this.start, this.start + length)
      this.start += length
      const [cid, bytes] = CID.decodeFirst(section)
      // A CID is small and often kept (a store's index, a list of what a request made): its own bytes.
      yield { cid: CID.decode(cid.bytes.slice()), bytes }
    }
  }
}
