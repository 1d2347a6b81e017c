import type { CID } from 'multiformats/cid'
import { FileChangedWhileHashingError } from '../content/index.js'
import { ContentIntegrityError } from '../errors.js'
import { CHUNK_BYTES, TAG_BYTES, chunkCount, openChunkPieces, plainChunkLength, sealChunk, type ChunkCid } from './chunks.js'

/** A chunk's plaintext is handed on in pieces this large (see openChunkPieces). */
const PLAIN_PIECE_BYTES = 64 * 1024

/** One sealed chunk, with where it lies in its file. */
export interface SealedChunk {
  readonly index: number
  readonly last: boolean
  /** Plaintext bytes it holds. */
  readonly plainBytes: number
  readonly bytes: Buffer
}

export interface SealStreamInit {
  /** The file key ({@link fileKey}). */
  readonly key: Uint8Array
  /** The file's CID as the index holds it: bound into every chunk. */
  readonly cid: CID
  /** The size the index holds: a source that gives more or fewer bytes is a changed file. */
  readonly size: number
  /** Seen for every plaintext slice, in order, before it is sealed: to hash the same bytes. */
  readonly onPlain?: (bytes: Uint8Array) => void
}

/**
 * Seals a file's bytes as they are read, a chunk at a time, so memory stays at one chunk whatever
 * the file's size. Throws {@link FileChangedWhileHashingError} when the source's length is not
 * `size` (the file changed since its row was written).
 */
export async function * sealStream (source: AsyncIterable<Uint8Array>, init: SealStreamInit): AsyncGenerator<SealedChunk> {
  let index = 0
  // Never more than the file's size: a source that gives more is refused before it is copied.
  const pending = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, init.size))
  let filled = 0
  let seen = 0
  const emit = (last: boolean): SealedChunk => {
    const plain = pending.subarray(0, filled)
    const chunk = { index, last, plainBytes: filled, bytes: sealChunk(init.key, init.cid, index, last, plain) }
    index++
    filled = 0
    return chunk
  }
  for await (const slice of source) {
    seen += slice.byteLength
    if (seen > init.size) throw new FileChangedWhileHashingError(`the file grew past its indexed ${init.size} bytes while it was read`)
    init.onPlain?.(slice)
    let offset = 0
    while (offset < slice.byteLength) {
      if (filled === CHUNK_BYTES) yield emit(false)
      const take = Math.min(pending.byteLength - filled, slice.byteLength - offset)
      pending.set(slice.subarray(offset, offset + take), filled)
      filled += take
      offset += take
    }
  }
  if (seen !== init.size) throw new FileChangedWhileHashingError(`the file has ${seen} bytes, not its indexed ${init.size}, as it was read`)
  yield emit(true)
}

export interface OpenStreamInit {
  readonly key: Uint8Array
  readonly cid: ChunkCid
  /** The file's size: frames the chunks, and a blob longer or shorter than it is refused. */
  readonly size: number
}

/**
 * Opens a blob fed in any slices, synchronously: each whole chunk is opened and handed to
 * `onPlain` (a view valid only during the call). {@link openStream} and the restoring threads
 * (seal-worker.ts) both open through it. A blob that does not open, or holds a byte more or less
 * than `size` seals to, throws {@link ContentIntegrityError} (from `feed` or `end`).
 */
export class ChunkOpener {
  private readonly count: number
  /**
   * Gathers a chunk that spans slices; made only then. A file whose blob lies whole in one slice
   * (most files of a pack) opens where it lies, and costs no chunk-sized buffer: a MiB each of
   * thousands of small files was external memory, collected again and again.
   */
  private buffer: Buffer | undefined
  private index = 0
  private filled = 0
  private want: number

  constructor (private readonly init: OpenStreamInit, private readonly onPlain: (plain: Buffer) => void) {
    this.count = chunkCount(init.size)
    this.want = plainChunkLength(init.size, 0) + TAG_BYTES
  }

  feed (slice: Uint8Array): void {
    const { init } = this
    let offset = 0
    while (offset < slice.byteLength) {
      if (this.index >= this.count) throw new ContentIntegrityError(`the stored content of ${init.cid.toString()} is longer than its ${init.size} bytes seal to: damaged or forged`)
      const take = Math.min(this.want - this.filled, slice.byteLength - offset)
      // A whole chunk in the slice is opened where it lies: no copy.
      const whole = this.filled === 0 && take === this.want
      const buffer = whole ? undefined : (this.buffer ??= Buffer.allocUnsafe(CHUNK_BYTES + TAG_BYTES))
      buffer?.set(slice.subarray(offset, offset + take), this.filled)
      this.filled += take
      if (this.filled === this.want) {
        const last = this.index === this.count - 1
        const sealed = buffer === undefined ? slice.subarray(offset, offset + take) : buffer.subarray(0, this.want)
        for (const plain of openChunkPieces(init.key, init.cid, this.index, last, sealed, PLAIN_PIECE_BYTES)) this.onPlain(plain)
        this.index++
        this.filled = 0
        if (!last) this.want = plainChunkLength(init.size, this.index) + TAG_BYTES
      }
      offset += take
    }
  }

  end (): void {
    if (this.index !== this.count || this.filled !== 0) throw new ContentIntegrityError(`the stored content of ${this.init.cid.toString()} ends after ${this.index} of its ${this.count} chunks: truncated`)
  }
}

/**
 * Opens a blob read in any slices and yields the file's plaintext a chunk at a time. A blob that
 * does not open, or holds a byte more or less than `size` seals to, throws
 * {@link ContentIntegrityError}.
 */
export async function * openStream (source: AsyncIterable<Uint8Array>, init: OpenStreamInit): AsyncGenerator<Buffer> {
  const opened: Buffer[] = []
  const opener = new ChunkOpener(init, (plain) => { opened.push(plain) })
  for await (const slice of source) {
    opener.feed(slice)
    while (opened.length > 0) yield opened.shift() as Buffer
  }
  opener.end()
}
