import { openSync, readSync, closeSync, fstatSync, constants, type Stats } from 'node:fs'
import { open } from 'node:fs/promises'
import type { CID } from 'multiformats/cid'
import { CidBuilder } from './cid-builder.js'
import type { CidProfile } from './profiles.js'
import { AbortedError } from '../errors.js'

/** What hashing a file saw: its CID and the stat it was read under. */
export interface FileCid {
  readonly cid: CID
  readonly size: number
  readonly mtimeMs: number
  /** What else the stat said of the file, for the index to record what it is. */
  readonly stat: StatTuple
}

/** A stat's mode, owner, group, link count, device and inode: small enough to pass between threads cheaply. */
export type StatTuple = readonly [mode: number, uid: number, gid: number, nlink: number, dev: number, ino: number]

/** The parts of a stat the index records beside a file's CID. */
export function statTuple (stats: Stats): StatTuple {
  return [stats.mode, stats.uid, stats.gid, stats.nlink, stats.dev, stats.ino]
}

/** Thrown when a file's size or mtime moved while it was read: the CID would describe no real state. */
export class FileChangedWhileHashingError extends Error {
  readonly code = 'ERR_FILE_CHANGED'
}

/** Thrown for a path that is not a regular file (a FIFO swapped in after a stat, a device). */
export class NotAFileError extends Error {
  constructor (message: string, readonly code: 'EISDIR' | 'ERR_NOT_A_FILE') {
    super(message)
  }
}

function requireRegularFile (path: string, stats: Stats): void {
  if (stats.isDirectory()) throw new NotAFileError(`${path} is a directory`, 'EISDIR')
  if (!stats.isFile()) throw new NotAFileError(`${path} is not a regular file`, 'ERR_NOT_A_FILE')
}

const READ_BYTES = 2 * 1024 * 1024

/** Buffers one thread reuses for every file it hashes under one profile. */
export interface HashBuffers {
  /** Whole chunks are hashed where they were read: a multiple of the chunk size. */
  readonly read: Buffer
  /** Gathers the last, partial chunk. */
  readonly scratch: Buffer
}

export function allocateHashBuffers (profile: CidProfile): HashBuffers {
  const chunks = Math.max(1, Math.floor(READ_BYTES / profile.chunkSize))
  return { read: Buffer.allocUnsafe(chunks * profile.chunkSize), scratch: Buffer.allocUnsafe(profile.chunkSize) }
}

/**
 * Hashes a file with blocking reads into reused buffers. Meant for worker threads, where blocking
 * is the fast path; the main thread uses {@link fileCid}.
 */
export function fileCidSync (path: string, profile: CidProfile, buffers: HashBuffers = allocateHashBuffers(profile), onRead?: (bytes: number) => void): FileCid {
  return hashOpened(path, profile, buffers, onRead, Infinity) as FileCid
}

/**
 * {@link fileCidSync} for a file of at most `maxBytes` as it is opened; a larger one is not read
 * ('too-large'). For a caller that may block on a small file only.
 */
export function smallFileCidSync (path: string, profile: CidProfile, buffers: HashBuffers, maxBytes: number): FileCid | 'too-large' {
  return hashOpened(path, profile, buffers, undefined, maxBytes)
}

function hashOpened (path: string, profile: CidProfile, buffers: HashBuffers, onRead: ((bytes: number) => void) | undefined, maxBytes: number): FileCid | 'too-large' {
  const buffer = buffers.read
  // O_NONBLOCK: a FIFO swapped in after the caller's stat must not block the thread in open().
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
  try {
    const before = fstatSync(fd)
    requireRegularFile(path, before)
    if (before.size > maxBytes) return 'too-large'
    const builder = new CidBuilder(profile, { scratch: buffers.scratch })
    // Read the size fstat gave, then one byte more: a file that grew or shrank meanwhile fails
    // the check below, and one with more bytes than its size says (/proc, a stale size) here.
    for (let remaining = before.size; remaining > 0;) {
      const read = readFully(fd, buffer.subarray(0, Math.min(buffer.byteLength, remaining)))
      if (read === 0) break
      builder.update(buffer.subarray(0, read))
      onRead?.(read)
      remaining -= read
    }
    if (builder.size === before.size && readSync(fd, buffer, 0, 1, null) > 0) throw new FileChangedWhileHashingError(`${path} holds more bytes than its size says`)
    const after = fstatSync(fd)
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || builder.size !== before.size) {
      throw new FileChangedWhileHashingError(`${path} changed while it was being hashed`)
    }
    return { cid: builder.finish(), size: before.size, mtimeMs: before.mtimeMs, stat: statTuple(before) }
  } finally {
    closeSync(fd)
  }
}

function readFully (fd: number, buffer: Buffer): number {
  let filled = 0
  while (filled < buffer.byteLength) {
    const read = readSync(fd, buffer, filled, buffer.byteLength - filled, null)
    if (read === 0) break
    filled += read
  }
  return filled
}

export interface FileCidOptions {
  readonly signal?: AbortSignal
  /** The device and inode an lstat of `path` found: another file there by now fails the hash. */
  readonly inode?: { readonly dev: number, readonly ino: number }
}

/** Hashes a file without blocking the event loop. */
export async function fileCid (path: string, profile: CidProfile, options: FileCidOptions = {}): Promise<FileCid> {
  // Given the inode an lstat saw, the file opened must be that one: a link there now is refused.
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | (options.inode === undefined ? 0 : constants.O_NOFOLLOW))
  try {
    const before = await handle.stat()
    requireRegularFile(path, before)
    if (options.inode !== undefined && (before.dev !== options.inode.dev || before.ino !== options.inode.ino)) {
      throw new FileChangedWhileHashingError(`${path} was replaced after it was looked at`)
    }
    // A buffer no larger than the file: a restore that compares thousands of small local files
    // allocated two megabytes for each, and spent its time collecting them.
    const chunks = Math.max(1, Math.floor(READ_BYTES / profile.chunkSize))
    const buffer = Buffer.allocUnsafe(Math.max(1, Math.min(chunks * profile.chunkSize, before.size)))
    const builder = new CidBuilder(profile)
    // Read the size the stat gave, then once more: a file with more bytes than its stat says (a
    // stale size, /proc) must fail, never hash as the shorter file.
    for (let remaining = before.size; ;) {
      if (options.signal?.aborted === true) throw new AbortedError(`hashing ${path} was aborted`)
      const { bytesRead } = await handle.read(buffer, 0, remaining > 0 ? Math.min(buffer.byteLength, remaining) : 1, null)
      if (bytesRead === 0) break
      if (remaining === 0) throw new FileChangedWhileHashingError(`${path} holds more bytes than its size says`)
      builder.update(buffer.subarray(0, bytesRead))
      remaining -= bytesRead
    }
    const after = await handle.stat()
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || builder.size !== before.size) {
      throw new FileChangedWhileHashingError(`${path} changed while it was being hashed`)
    }
    return { cid: builder.finish(), size: before.size, mtimeMs: before.mtimeMs, stat: statTuple(before) }
  } finally {
    await handle.close()
  }
}

/** The CID of bytes already in memory (small inputs, tests, verification of fetched blocks). */
export function bytesCid (bytes: Uint8Array, profile: CidProfile): CID {
  return new CidBuilder(profile).update(bytes).finish()
}
