import { closeSync, constants, fstatSync, ftruncateSync, openSync, rmSync, writeSync } from 'node:fs'
import { alignedBuffers, DIRECT_ALIGN, takesDirectWrite } from './direct-io.js'

/** Bytes a direct write sends at once: enough to reach the disk's speed (docs/benchmarks.md, "Restoring files"). */
export const DIRECT_STAGE_BYTES = 1024 * 1024

/**
 * Aligned staging memory of one thread, found once by probing an O_DIRECT descriptor, then lent
 * to one file at a time: at most `count` files are written directly at once, the others through
 * the page cache.
 */
export class DirectStages {
  private free: Buffer[] | undefined
  private probed = false

  constructor (private readonly count: number) {}

  /** A stage for a file opened on `fd` with O_DIRECT, or undefined (none left, or no address the kernel takes). */
  take (fd: number): Buffer | undefined {
    if (!this.probed) {
      this.probed = true
      this.free = alignedBuffers(fd, DIRECT_STAGE_BYTES, this.count)
    }
    return this.free?.pop()
  }

  give (stage: Buffer): void {
    this.free?.push(stage)
  }
}

/**
 * A new file (`wx`, `mode`) written around the page cache: its bytes are copied into an aligned
 * stage and written a stage at a time with O_DIRECT. What is not a whole sector (the file's last
 * bytes), and the rest of a stage a direct write came short of (a full disk, the file size limit),
 * go through a second, buffered descriptor of the same file. It writes what fits and names what
 * does not (ENOSPC, EFBIG). A tail padded to a sector could fail a file that fits as "disk full",
 * as on 1 KiB-block ext4 or under `ulimit -f`. Filling the page cache costs far more kernel CPU
 * than direct writes, most of all on a VM whose memory the host takes back when it is free
 * (docs/benchmarks.md, "Figures behind the code's comments"). This is for files written once and
 * not read soon (a restore), so nothing is lost by keeping them out of the cache. An fsync of
 * {@link fd} makes both descriptors' writes durable (one inode).
 */
export class DirectWriter {
  private filled = 0
  private position = 0
  private released = false

  private constructor (readonly fd: number, private readonly buffered: number, private readonly stage: Buffer, private readonly stages: DirectStages) {}

  /**
   * Creates `path` with O_DIRECT and a stage from `stages`. Answers undefined when the filesystem
   * or the memory does not take direct writes, when no stage is free, or when the file cannot be
   * opened again without the flag. Nothing is left at `path` then: the caller creates it as usual.
   */
  static create (path: string, mode: number, stages: DirectStages): DirectWriter | undefined {
    if (constants.O_DIRECT === undefined) return undefined
    let fd: number
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_DIRECT, mode)
    } catch (err) {
      // A filesystem without O_DIRECT (ramfs) refuses it at open; it may have made the file first.
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err
      rmSync(path, { force: true })
      return undefined
    }
    let stage: Buffer | undefined
    let buffered: number | undefined
    try {
      stage = stages.take(fd)
      // Some filesystems open with the flag and refuse the writes: one sector from this stage tells.
      if (stage !== undefined && takesDirectWrite(fd, stage.subarray(0, DIRECT_ALIGN).fill(0))) buffered = reopenBuffered(fd)
    } catch (err) {
      if (stage !== undefined) stages.give(stage)
      closeSync(fd)
      rmSync(path, { force: true })
      throw err
    }
    if (stage === undefined || buffered === undefined) {
      if (stage !== undefined) stages.give(stage)
      closeSync(fd)
      rmSync(path, { force: true })
      return undefined
    }
    return new DirectWriter(fd, buffered, stage, stages)
  }

  /** Appends `bytes`, writing each stage as it fills. */
  write (bytes: Uint8Array): void {
    for (let at = 0; at < bytes.byteLength;) {
      const take = Math.min(DIRECT_STAGE_BYTES - this.filled, bytes.byteLength - at)
      this.stage.set(bytes.subarray(at, at + take), this.filled)
      this.filled += take
      at += take
      if (this.filled === DIRECT_STAGE_BYTES) this.flush()
    }
  }

  /** Writes what is left and cuts the file to the bytes written (the first sector may hold a probe's zeros). Both descriptors stay open. */
  finish (): void {
    this.flush()
    ftruncateSync(this.fd, this.position)
  }

  /** Gives the stage back and closes the buffered descriptor (once, whatever the calls); {@link fd} is the caller's to close. */
  release (): void {
    if (this.released) return
    this.released = true
    this.stages.give(this.stage)
    try {
      closeSync(this.buffered)
    } catch {
      // Its writes are the inode's: the fsync of `fd` makes them durable or fails. A throw here
      // would keep the caller from closing `fd` and removing a file given up.
    }
  }

  /** Writes the stage's bytes at the file's position: the whole sectors directly, the rest through the cache. */
  private flush (): void {
    const whole = this.filled - this.filled % DIRECT_ALIGN
    let wrote = 0
    try {
      if (whole > 0) wrote = writeSync(this.fd, this.stage, 0, whole, this.position)
    } catch (err) {
      // The file size limit cut the write at a byte that is no sector's end, which O_DIRECT refuses
      // (EINVAL): the cache's write below names the limit (EFBIG), or writes what fits.
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err
    }
    if (wrote < this.filled) writeAllAt(this.buffered, this.stage.subarray(wrote, this.filled), this.position + wrote)
    this.position += this.filled
    this.filled = 0
  }
}

/**
 * A second descriptor of `fd`'s file without O_DIRECT, through /proc (so no path is looked up
 * again in a directory others may write to), checked to be the same inode; undefined where /proc
 * is not there.
 */
function reopenBuffered (fd: number): number | undefined {
  let again: number
  try {
    again = openSync(`/proc/self/fd/${fd}`, constants.O_WRONLY)
  } catch {
    return undefined
  }
  try {
    const [a, b] = [fstatSync(fd), fstatSync(again)]
    if (a.dev === b.dev && a.ino === b.ino) return again
  } catch {}
  closeSync(again)
  return undefined
}

/** Writes all of `bytes` at `position` through a buffered descriptor: a short write is followed by one that names why (ENOSPC, EFBIG). */
function writeAllAt (fd: number, bytes: Uint8Array, position: number): void {
  for (let done = 0; done < bytes.byteLength;) {
    const wrote = writeSync(fd, bytes, done, bytes.byteLength - done, position + done)
    if (wrote === 0) throw Object.assign(new Error(`ENOSPC: no room to write past byte ${position + done}`), { code: 'ENOSPC' })
    done += wrote
  }
}
