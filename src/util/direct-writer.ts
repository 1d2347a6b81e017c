import { closeSync, constants, fstatSync, ftruncateSync, openSync, rmSync, write, writeSync } from 'node:fs'
import { InternalError } from '../errors.js'
import { alignedBuffers, DIRECT_ALIGN, takesDirectWrite } from './direct-io.js'

/** Bytes a direct write sends at once: enough to reach the disk's speed (docs/benchmarks.md, "Restoring files"). */
export const DIRECT_STAGE_BYTES = 1024 * 1024

/**
 * Aligned staging memory of one thread, found once by probing an O_DIRECT descriptor, then lent
 * to the files it writes: a file takes one to write at all (the others go through the page cache)
 * and a few more while they are free, so one stage fills while the others are written.
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

  /** Stages left to lend. */
  get left (): number {
    return this.free?.length ?? 0
  }

  give (stage: Buffer): void {
    this.free?.push(stage)
  }
}

/** Stages one file holds at most: one filling while the others are written. */
const STAGES_PER_FILE = 3

/**
 * A new file (`wx`, `mode`) written around the page cache: its bytes are copied into an aligned
 * stage and written a stage at a time with O_DIRECT. A full stage is written on libuv's threads
 * while the next fills, so the caller's CPU work and the disk overlap; with no stage free, it is
 * written at once. What is not a whole sector (the file's last bytes), and the rest of a stage a
 * direct write came short of (a full disk, the file size limit), go through a second, buffered
 * descriptor of the same file. It writes what fits and names what does not (ENOSPC, EFBIG). A tail
 * padded to a sector could fail a file that fits as "disk full", as on 1 KiB-block ext4 or under
 * `ulimit -f`. Filling the page cache costs far more kernel CPU than direct writes, most of all on
 * a VM whose memory the host takes back when it is free (docs/benchmarks.md, "Figures behind the
 * code's comments"). This is for files written once and not read soon (a restore), so nothing is
 * lost by keeping them out of the cache. An fsync of {@link fd} makes both descriptors' writes
 * durable (one inode). Its descriptor is closed only once {@link settled}: a write still queued
 * would otherwise land in whatever file reuses the number.
 */
export class DirectWriter {
  private filled = 0
  private position = 0
  private released = false
  /** The stage being filled (undefined once released). */
  private current: Buffer | undefined
  /** This file's stages not in use. */
  private readonly spare: Buffer[] = []
  private writing = 0
  private failure: Error | undefined
  private waiters: Array<() => void> = []

  private constructor (readonly fd: number, private readonly buffered: number, stage: Buffer, private readonly stages: DirectStages) {
    this.current = stage
    // A few more while the thread has them free: the first file does not take what later ones need to write directly at all.
    while (this.spare.length < STAGES_PER_FILE - 1 && stages.left > STAGES_PER_FILE) this.spare.push(stages.take(fd) as Buffer)
  }

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

  /** Appends `bytes`, each stage written as it fills (see {@link room}); throws a write's failure. */
  write (bytes: Uint8Array): void {
    this.check()
    for (let at = 0; at < bytes.byteLength;) {
      const stage = this.current as Buffer
      const take = Math.min(DIRECT_STAGE_BYTES - this.filled, bytes.byteLength - at)
      stage.set(bytes.subarray(at, at + take), this.filled)
      this.filled += take
      at += take
      if (this.filled === DIRECT_STAGE_BYTES) this.send()
    }
  }

  /**
   * Answers once `bytes` more can be written without waiting on the disk (or nothing is being
   * written): a caller that awaits it before each {@link write} keeps working while the disk writes.
   */
  async room (bytes: number): Promise<void> {
    // Each stage those bytes fill is swapped for a spare as it goes to the disk.
    while (this.writing > 0 && this.spare.length < Math.floor((this.filled + bytes) / DIRECT_STAGE_BYTES)) await new Promise<void>(resolve => { this.waiters.push(resolve) })
    this.check()
  }

  /** Answers once no write of this file is under way; throws the first that failed. */
  async settled (): Promise<void> {
    while (this.writing > 0) await new Promise<void>(resolve => { this.waiters.push(resolve) })
    this.check()
  }

  /**
   * Writes what is left and cuts the file to the bytes written (the first sector may hold a
   * probe's zeros), once every write is done. Both descriptors stay open.
   */
  async finish (): Promise<void> {
    await this.settled()
    if (this.filled > 0) this.writeNow(this.current as Buffer, this.filled, this.position)
    this.position += this.filled
    this.filled = 0
    ftruncateSync(this.fd, this.position)
  }

  /**
   * Gives the stages back and closes the buffered descriptor (once, whatever the calls); {@link fd}
   * is the caller's to close, once {@link settled}. A stage still being written goes back when its
   * write ends: no other file fills it while the disk reads it.
   */
  release (): void {
    if (this.released) return
    this.released = true
    for (const stage of this.spare.splice(0)) this.stages.give(stage)
    if (this.current !== undefined) this.stages.give(this.current)
    this.current = undefined
    if (this.writing > 0) return
    this.closeBuffered()
  }

  private closeBuffered (): void {
    try {
      closeSync(this.buffered)
    } catch {
      // Its writes are the inode's: the fsync of `fd` makes them durable or fails. A throw here
      // would keep the caller from closing `fd` and removing a file given up.
    }
  }

  private check (): void {
    if (this.failure !== undefined) throw this.failure
    if (this.released) throw new InternalError('a direct writer was written to after its release')
  }

  /** Hands the full stage to libuv's threads, and takes a spare one to fill (or, with none, writes it at once). */
  private send (): void {
    const stage = this.current as Buffer
    const position = this.position
    this.position += this.filled
    this.filled = 0
    const next = this.spare.pop()
    if (next === undefined) {
      // No other stage to fill meanwhile (a caller that did not wait for room, or a file of one
      // stage): this one is written here, and filled again.
      this.writeNow(stage, DIRECT_STAGE_BYTES, position)
      return
    }
    this.current = next
    this.writing++
    write(this.fd, stage, 0, DIRECT_STAGE_BYTES, position, (err, wrote) => {
      try {
        if (err !== null && err.code !== 'EINVAL') throw err
        // A short or refused direct write: the rest through the cache, which names why it stops.
        if (err !== null || wrote < DIRECT_STAGE_BYTES) writeAllAt(this.buffered, stage.subarray(err !== null ? 0 : wrote), position + (err !== null ? 0 : wrote))
      } catch (failure) {
        this.failure ??= failure as Error
      }
      this.writing--
      if (this.released) this.stages.give(stage)
      else this.spare.push(stage)
      if (this.released && this.writing === 0) this.closeBuffered()
      for (const wake of this.waiters.splice(0)) wake()
    })
  }

  /** Writes a stage's first `filled` bytes at `position`: the whole sectors directly, the rest through the cache. */
  private writeNow (stage: Buffer, filled: number, position: number): void {
    const whole = filled - filled % DIRECT_ALIGN
    let wrote = 0
    try {
      if (whole > 0) wrote = writeSync(this.fd, stage, 0, whole, position)
    } catch (err) {
      // The file size limit cut the write at a byte that is no sector's end, which O_DIRECT refuses
      // (EINVAL): the cache's write below names the limit (EFBIG), or writes what fits.
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err
    }
    if (wrote < filled) writeAllAt(this.buffered, stage.subarray(wrote, filled), position + wrote)
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
