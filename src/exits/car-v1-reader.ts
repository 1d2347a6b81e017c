import type { FileHandle } from 'node:fs/promises'
import { bytesReader, readHeader } from '@ipld/car/decoder'
import { varint } from 'multiformats'
import { CID } from 'multiformats/cid'
import { CarSectionError, MAX_CAR_HEADER_BYTES } from '../content/index.js'
import { CarFormatError } from '../errors.js'

/** Bytes read from the file at a time. */
const READ_BYTES = 4 * 1024 * 1024
/** Room for a section's CID in front of its block. */
const CID_ROOM = 4096
/** A varint of a CAR is at most this long. */
const VARINT_ROOM = 10

/** A block of a CAR, as views into the reader's buffer: valid until the next one is asked for. */
export interface CarSection { readonly cid: CID, readonly bytes: Uint8Array }

/**
 * A CARv1 file read section by section through one buffer used again and again: each block is
 * handed over as a view of it, never copied (`@ipld/car`'s iterator copied every byte into new
 * memory, and the freeing of it was a third of a scan's time: docs/benchmarks.md, Exits, third
 * pass). Memory: one buffer of 4 MiB and the largest section taken. A CARv2 is not read here
 * ({@link open} answers undefined).
 */
export class CarV1Reader {
  private start = 0
  private end = 0
  private eof = false
  /** Bytes of the file before the buffer's start. */
  private consumed = 0

  private constructor (private readonly handle: FileHandle, private readonly buffer: Buffer, private readonly maxSection: number, readonly roots: CID[], private readonly signal?: AbortSignal) {}

  /** Reads the header: undefined for a CARv2 (its caller reads it another way). */
  static async open (handle: FileHandle, path: string, maxBlockBytes: number, signal?: AbortSignal): Promise<CarV1Reader | undefined> {
    const maxSection = maxBlockBytes + CID_ROOM
    const buffer = Buffer.allocUnsafeSlow(READ_BYTES + Math.max(maxSection, MAX_CAR_HEADER_BYTES) + VARINT_ROOM)
    const reader = new CarV1Reader(handle, buffer, maxSection, [], signal)
    await reader.fill(VARINT_ROOM)
    const length = reader.varint()
    if (length === undefined) throw new CarFormatError(`${path} is not a CAR file: it is empty`)
    if (length > MAX_CAR_HEADER_BYTES) throw new CarFormatError(`${path} is not a CAR file: the CAR header announces ${length} bytes, more than the ${MAX_CAR_HEADER_BYTES} taken`)
    await reader.fill(length)
    const bytes = bytesReader(buffer.subarray(0, reader.end))
    let header: Awaited<ReturnType<typeof readHeader>>
    try {
      header = await readHeader(bytes)
    } catch (err) {
      throw new CarFormatError(`${path} is not a CAR file: ${(err as Error).message}`)
    }
    if (header.version !== 1) return undefined
    reader.roots.push(...header.roots)
    reader.start = bytes.pos
    return reader
  }

  /** Reads until `need` bytes are in the buffer from its start, or the file ends. */
  private async fill (need: number): Promise<void> {
    while (this.end - this.start < need && !this.eof) {
      this.signal?.throwIfAborted()
      if (this.buffer.byteLength - this.end < READ_BYTES) {
        // What is left of a section moves to the front: at most one section, never the file.
        this.buffer.copyWithin(0, this.start, this.end)
        this.consumed += this.start
        this.end -= this.start
        this.start = 0
      }
      const { bytesRead } = await this.handle.read(this.buffer, this.end, Math.min(READ_BYTES, this.buffer.byteLength - this.end), this.consumed + this.end)
      if (bytesRead === 0) this.eof = true
      this.end += bytesRead
    }
  }

  /** A varint at the buffer's start (read past), or undefined at the file's end. */
  private varint (): number | undefined {
    if (this.end === this.start) return undefined
    const window = this.buffer.subarray(this.start, Math.min(this.end, this.start + VARINT_ROOM))
    let length = 0
    while (length < window.byteLength && ((window[length] as number) & 0x80) !== 0) length++
    if (length === window.byteLength) throw new CarSectionError(length >= 9 ? 'a CAR length prefix longer than 9 bytes' : 'the file ends inside a length prefix')
    const [value] = varint.decode(window)
    this.start += length + 1
    return value
  }

  /** Each block in turn; each answered view is read over once the next is asked for. */
  async * sections (): AsyncGenerator<CarSection> {
    for (;;) {
      await this.fill(VARINT_ROOM)
      const length = this.varint()
      if (length === undefined) return
      if (length > this.maxSection) throw new CarSectionError(`a CAR section announces ${length} bytes, more than a block of ${this.maxSection - CID_ROOM} bytes and its CID`)
      await this.fill(length)
      if (this.end - this.start < length) throw new CarSectionError('Unexpected end of data')
      const section = this.buffer.subarray(this.start, this.start + length)
      this.start += length
      const [cid, bytes] = CID.decodeFirst(section)
      yield { cid, bytes }
    }
  }
}
