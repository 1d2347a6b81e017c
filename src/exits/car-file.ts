import { constants } from 'node:fs'
import { open, rm, type FileHandle } from 'node:fs/promises'
import * as CarBufferWriter from '@ipld/car/buffer-writer'
import type { CID } from 'multiformats/cid'
import { CarWriteError, InternalError } from '../errors.js'
import { alignedBuffers, DIRECT_ALIGN } from '../util/direct-io.js'

/**
 * The CAR's bytes are copied into buffers of this size and each written whole at its place: one
 * write a 4 MiB. With O_DIRECT bigger writes are cheaper (no page cache to fill); 4 MiB is what
 * `dd` needs to reach the disk's speed here.
 */
const BATCH_BYTES = 4 * 1024 * 1024
/**
 * Buffers: one being filled while the others are on their way to the disk. Memory: 12 MiB,
 * whatever the blocks' sizes.
 */
const BUFFERS = 3
/**
 * Without O_DIRECT (a filesystem that refuses it, as tmpfs does), a `datasync` is started each
 * time this much more was written (one at a time, never awaited on the way): the disk writes back
 * while the export reads and hashes, instead of taking the whole CAR at the final fsync.
 */
const SYNC_EVERY = 64 * 1024 * 1024

/** A CARv1 header naming `root`. */
function headerOf (root: CID): Uint8Array {
  const writer = CarBufferWriter.createWriter(new ArrayBuffer(CarBufferWriter.headerLength({ roots: [root] })), { roots: [root] })
  return CarBufferWriter.close(writer, { resize: true })
}

function varint (value: number): Uint8Array {
  const bytes: number[] = []
  while (value >= 0x80) {
    bytes.push((value % 0x80) | 0x80)
    value = Math.floor(value / 0x80)
  }
  bytes.push(value)
  return Uint8Array.from(bytes)
}

/** Opens `path` exclusively (0600), with O_DIRECT when asked and its filesystem takes it. */
async function openNew (path: string, direct: boolean): Promise<{ handle: FileHandle, direct: boolean }> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL
  if (direct && constants.O_DIRECT !== undefined) {
    try {
      return { handle: await open(path, flags | constants.O_DIRECT, 0o600), direct: true }
    } catch (err) {
      // EINVAL: a filesystem without O_DIRECT (tmpfs), which may have made the file first.
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err
      await rm(path, { force: true })
    }
  }
  return { handle: await open(path, flags, 0o600), direct: false }
}

/**
 * A CAR v1 written straight to a new file, in the order its blocks are put. Its bytes are copied
 * into three 4 MiB buffers, each written whole at its place while the next fills, so memory
 * stays at 12 MiB. The file is opened with O_DIRECT where the filesystem allows: the writes skip
 * the page cache (3-12x faster than buffered appends and their writeback on the benchmark
 * machine's disk: docs/benchmarks.md, Exits) and leave no gigabyte of dirty pages for the fsync.
 * {@link close} fsyncs the file once.
 */
export class CarFile {
  private readonly free: Buffer[]
  private current: Buffer
  private filled = 0
  private position = 0
  private readonly writes: Array<{ done: Promise<void>, buffer: Buffer }> = []
  private syncing: Promise<void> | undefined
  private sinceSync = 0
  private failure: unknown
  private headerLength = 0
  private lateHeader: Uint8Array | undefined

  private constructor (private readonly handle: FileHandle, private readonly path: string, private readonly direct: boolean, buffers: Buffer[]) {
    this.free = buffers
    this.current = this.free.pop() as Buffer
  }

  /**
   * Creates `path` (it must not exist: 0600, exclusive) with the header naming `root`.
   * `options.direct: false` writes through the page cache (what a filesystem without O_DIRECT gets).
   */
  static async create (path: string, root: CID, options: { readonly direct?: boolean } = {}): Promise<CarFile> {
    let { handle, direct } = await openNew(path, options.direct ?? true)
    let buffers: Buffer[] | undefined
    try {
      if (direct) buffers = alignedBuffers(handle.fd, BATCH_BYTES, BUFFERS)
      if (buffers === undefined && direct) {
        // O_DIRECT opened but no buffer it takes: written through the page cache instead.
        await handle.close()
        await rm(path, { force: true })
        handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600)
        direct = false
      }
    } catch (err) {
      await handle.close().catch(() => {})
      throw err
    }
    buffers ??= Array.from({ length: BUFFERS }, () => Buffer.allocUnsafeSlow(BATCH_BYTES))
    const file = new CarFile(handle, path, direct, buffers)
    const header = headerOf(root)
    file.headerLength = header.byteLength
    await file.add(header)
    return file
  }

  /**
   * Names `root` in the header instead of the CID it was created with (a root known only once
   * every block is written): a CID of the same length, written over the header at {@link close}.
   */
  nameRoot (root: CID): void {
    const header = headerOf(root)
    if (header.byteLength !== this.headerLength) throw new InternalError(`a CAR's root named late must be as long as the one it replaces (${header.byteLength} bytes of header, not ${this.headerLength})`)
    this.lateHeader = header
  }

  /** Copies `part` into the buffers, writing each one that fills. */
  private async add (part: Uint8Array): Promise<void> {
    for (let at = 0; at < part.byteLength;) {
      const take = Math.min(BATCH_BYTES - this.filled, part.byteLength - at)
      this.current.set(part.subarray(at, at + take), this.filled)
      this.filled += take
      at += take
      if (this.filled === BATCH_BYTES) await this.flush()
    }
  }

  /** Appends a block; waits only while every buffer is on its way to the disk. */
  async put (cid: CID, bytes: Uint8Array): Promise<void> {
    if (this.failure !== undefined) throw this.failure
    await this.add(varint(cid.bytes.byteLength + bytes.byteLength))
    await this.add(cid.bytes)
    await this.add(bytes)
  }

  /** Sends the current buffer (whole but for the last, which O_DIRECT pads) and takes a free one. */
  private async flush (): Promise<void> {
    if (this.filled === 0) return
    const buffer = this.current
    const bytes = this.filled
    const at = this.position
    // O_DIRECT writes whole sectors: the last buffer is padded, and close() truncates the pad.
    const length = this.direct ? Math.ceil(bytes / DIRECT_ALIGN) * DIRECT_ALIGN : bytes
    if (length > bytes) buffer.fill(0, bytes, length)
    this.position += bytes
    this.filled = 0
    const done = this.write(buffer.subarray(0, length), at)
    // Awaited in turn below or by close(); its failure is kept and thrown from the next put.
    done.catch((err: unknown) => { this.failure ??= err })
    this.writes.push({ done, buffer })
    this.sinceSync += bytes
    if (!this.direct && this.sinceSync >= SYNC_EVERY && this.syncing === undefined) {
      this.sinceSync = 0
      const sync = this.handle.datasync().finally(() => { this.syncing = undefined })
      sync.catch((err: unknown) => { this.failure ??= err })
      this.syncing = sync
    }
    while (this.free.length === 0) {
      const oldest = this.writes.shift() as { done: Promise<void>, buffer: Buffer }
      await oldest.done
      this.free.push(oldest.buffer)
    }
    this.current = this.free.pop() as Buffer
    if (this.failure !== undefined) throw this.failure
  }

  private async write (bytes: Buffer, at: number, handle = this.handle): Promise<void> {
    for (let done = 0; done < bytes.byteLength;) {
      // A regular file is written whole unless the disk fills: then the rest is tried, for its error.
      const wrote = (await handle.write(bytes, done, bytes.byteLength - done, at + done)).bytesWritten
      if (wrote === 0) throw new CarWriteError(this.path, at + done)
      done += wrote
    }
  }

  private async settle (): Promise<void> {
    while (this.writes.length > 0) {
      const write = this.writes.shift() as { done: Promise<void>, buffer: Buffer }
      await write.done
      this.free.push(write.buffer)
    }
    await this.syncing
  }

  /** Writes what is left, fsyncs the file and closes it; answers the CAR's size. */
  async close (): Promise<number> {
    try {
      await this.flush()
      await this.settle()
      if (this.failure !== undefined) throw this.failure
      if (this.direct) await this.handle.truncate(this.position)
      if (this.lateHeader !== undefined) await this.writeHeader(this.lateHeader)
      await this.handle.sync()
      return this.position
    } finally {
      await this.abort()
    }
  }

  /**
   * The header written over the first one, every other write done: through a descriptor of its
   * own, without O_DIRECT (a few bytes, not a sector); the fsync that follows covers it.
   */
  private async writeHeader (header: Uint8Array): Promise<void> {
    const handle = await open(this.path, constants.O_WRONLY)
    try {
      await this.write(Buffer.from(header.buffer, header.byteOffset, header.byteLength), 0, handle)
    } finally {
      await handle.close()
    }
  }

  /** Waits for the writes on their way (their errors dropped) and closes the file, written or not. */
  async abort (): Promise<void> {
    await this.settle().catch(() => {})
    await this.handle.close().catch(() => {})
  }
}
