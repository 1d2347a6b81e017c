import { open, type FileHandle } from 'node:fs/promises'
import * as CarBufferWriter from '@ipld/car/buffer-writer'
import type { CID } from 'multiformats/cid'
import { CarWriteError } from '../errors.js'

/**
 * Blocks gathered into one positional `writev` (a write per block's three parts was 12,000 writes a
 * GiB). 1 MiB batches wrote a GiB in 1.1-1.6 s (two to four in flight) where 4 MiB ones took
 * 1.6-6.1 s and `@ipld/car`'s stream 1.3-2.9 s (to tmpfs, interleaved, on the loaded 2-core machine).
 */
const BATCH_BYTES = 1024 * 1024
/** Parts (a length, a CID, a block) in one batch: well under IOV_MAX (1024) whatever the blocks' sizes. */
const BATCH_PARTS = 3 * 128
/**
 * Batches on their way to the disk at once. The writes run on libuv's four threads, which also
 * carry the datasync below and an in-process gateway's block reads: two writes and a sync leave
 * the reads a thread however long a contended disk holds them.
 */
const WRITES_IN_FLIGHT = 2
/**
 * A `datasync` is started each time this much more was written (one at a time, never awaited on
 * the way): the disk writes back while the export fetches and hashes, instead of taking the whole
 * CAR at the final fsync (on this machine the disk, not the hashing, is an export's floor).
 */
const SYNC_EVERY = 64 * 1024 * 1024

function varint (value: number): Uint8Array {
  const bytes: number[] = []
  while (value >= 0x80) {
    bytes.push((value % 0x80) | 0x80)
    value = Math.floor(value / 0x80)
  }
  bytes.push(value)
  return Uint8Array.from(bytes)
}

/**
 * A CAR v1 written straight to a new file, in the order its blocks are put: their parts gathered
 * into writes of about 1 MiB, two of them in flight while the caller fetches the next blocks.
 * Memory holds at most three batches: 3 MiB and three blocks. {@link close} fsyncs the file.
 */
export class CarFile {
  private batch: Uint8Array[] = []
  private batchBytes = 0
  private position = 0
  private readonly writes: Array<Promise<void>> = []
  private syncing: Promise<void> | undefined
  private sinceSync = 0
  private failure: unknown

  private constructor (private readonly handle: FileHandle, private readonly path: string) {}

  /** Creates `path` (it must not exist: 0600, exclusive) with the header naming `root`. */
  static async create (path: string, root: CID): Promise<CarFile> {
    const handle = await open(path, 'wx', 0o600)
    const file = new CarFile(handle, path)
    const header = CarBufferWriter.createWriter(new ArrayBuffer(CarBufferWriter.headerLength({ roots: [root] })), { roots: [root] })
    file.add(CarBufferWriter.close(header, { resize: true }))
    return file
  }

  private add (part: Uint8Array): void {
    this.batch.push(part)
    this.batchBytes += part.byteLength
  }

  /** Appends a block; waits only while as many writes as allowed are on their way. The bytes are kept until written. */
  async put (cid: CID, bytes: Uint8Array): Promise<void> {
    if (this.failure !== undefined) throw this.failure
    this.add(varint(cid.bytes.byteLength + bytes.byteLength))
    this.add(cid.bytes)
    if (bytes.byteLength > 0) this.add(bytes)
    if (this.batchBytes >= BATCH_BYTES || this.batch.length >= BATCH_PARTS) await this.flush()
  }

  private async flush (): Promise<void> {
    if (this.batch.length === 0) return
    const parts = this.batch
    const bytes = this.batchBytes
    const at = this.position
    this.batch = []
    this.batchBytes = 0
    this.position += bytes
    const write = this.write(parts, bytes, at)
    // Awaited in turn below or by close(); its failure is kept and thrown from the next put.
    write.catch((err: unknown) => { this.failure ??= err })
    this.writes.push(write)
    this.sinceSync += bytes
    if (this.sinceSync >= SYNC_EVERY && this.syncing === undefined) {
      this.sinceSync = 0
      const sync = this.handle.datasync().finally(() => { this.syncing = undefined })
      sync.catch((err: unknown) => { this.failure ??= err })
      this.syncing = sync
    }
    while (this.writes.length >= WRITES_IN_FLIGHT) await this.writes.shift()
    if (this.failure !== undefined) throw this.failure
  }

  private async write (parts: Uint8Array[], bytes: number, at: number): Promise<void> {
    const { bytesWritten } = await this.handle.writev(parts, at)
    if (bytesWritten === bytes) return
    // A regular file is written whole unless the disk fills: then the rest is tried, for its error.
    const rest = Buffer.concat(parts).subarray(bytesWritten)
    for (let done = 0; done < rest.byteLength;) {
      const wrote = (await this.handle.write(rest, done, rest.byteLength - done, at + bytesWritten + done)).bytesWritten
      if (wrote === 0) throw new CarWriteError(this.path, at + bytesWritten + done)
      done += wrote
    }
  }

  private async settle (): Promise<void> {
    while (this.writes.length > 0) await this.writes.shift()
    await this.syncing
  }

  /** Writes what is left, fsyncs the file and closes it; answers the CAR's size. */
  async close (): Promise<number> {
    try {
      await this.flush()
      await this.settle()
      if (this.failure !== undefined) throw this.failure
      await this.handle.sync()
      return this.position
    } finally {
      await this.abort()
    }
  }

  /** Waits for the writes on their way (their errors dropped) and closes the file, written or not. */
  async abort (): Promise<void> {
    await this.settle().catch(() => {})
    await this.handle.close().catch(() => {})
  }
}
