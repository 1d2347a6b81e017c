import { constants, type Stats } from 'node:fs'
import { lstat, mkdir, open, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { DirectoryStoreError } from '../errors.js'
import { fdPath } from '../util/fd-path.js'

// A directory store lives where others may write (a NAS share, a disk passed around). So nothing
// in it is followed, and nothing but a regular file is opened: a FIFO would hang the open, a
// device could act on being opened, a link could lead a write anywhere.

const errnoCode = (err: unknown): unknown => (err as { code?: unknown }).code

/** How much of a file one read takes. */
export const READ_BYTES = 1024 * 1024

/** A file's chunks, stopping at an abort between them. */
export async function * chunksOf (handle: FileHandle, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
  for await (const chunk of handle.createReadStream({ highWaterMark: READ_BYTES, autoClose: false }) as AsyncIterable<Buffer>) {
    signal?.throwIfAborted()
    yield chunk
  }
}

/** A CID's text as the store names files, or undefined for text that is not a canonical CID. */
export function canonical (text: string): string | undefined {
  try {
    const cid = CID.parse(text)
    return cid.toString() === text ? text : undefined
  } catch {
    return undefined
  }
}

/** Makes one folder (0700) whose parent is there; one already there is left as it is. */
export async function mkdirOnce (path: string): Promise<void> {
  await mkdir(path, { mode: 0o700 }).catch((err: unknown) => { if (errnoCode(err) !== 'EEXIST') throw err })
}

/** What an entry is, for messages: a link, a FIFO, a device or a directory, not a file. */
function kindOf (stats: Stats): string {
  if (stats.isSymbolicLink()) return 'a link'
  if (stats.isFIFO()) return 'a FIFO'
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device'
  if (stats.isDirectory()) return 'a directory'
  if (stats.isSocket()) return 'a socket'
  return 'a file'
}

/**
 * A system error of a write to the store at `dir`, named by the store: its path would name a
 * descriptor (`/proc/self/fd/N`), and a full or read-only disk is the store's, not the caller's.
 */
export function writeFailure (err: unknown, dir: string, describe: string): unknown {
  const { code, path, syscall } = err as NodeJS.ErrnoException
  if (typeof code !== 'string') return err
  const ours = typeof path === 'string' ? path.startsWith('/proc/self/fd/') || path.startsWith(dir) : ['ENOSPC', 'EDQUOT', 'EROFS'].includes(code)
  if (!ours) return err
  return new DirectoryStoreError(`could not write to ${describe} (${code} on ${syscall ?? 'write'}): check that its disk is mounted, writable and has room`, { cause: err })
}

/**
 * A regular file opened for reading, or undefined when nothing is there. Its entry is looked at
 * first, without following it, so nothing else is ever opened. The open cannot follow a link or
 * wait on a FIFO, and must find the same file. `refuse` names what else was found.
 */
export async function openRegular (path: string, refuse: (kind: string) => Error): Promise<{ handle: FileHandle, stats: Stats } | undefined> {
  const entry = await lstat(path).catch((err: unknown) => {
    if (errnoCode(err) === 'ENOENT') return undefined
    throw err
  })
  if (entry === undefined) return undefined
  if (!entry.isFile()) throw refuse(kindOf(entry))
  let handle: FileHandle
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (err) {
    const code = errnoCode(err)
    if (code === 'ENOENT') return undefined
    if (code === 'ELOOP') throw refuse('a link')
    throw err
  }
  const stats = await handle.stat()
  if (!stats.isFile() || stats.ino !== entry.ino || stats.dev !== entry.dev) {
    await handle.close()
    throw refuse('an entry swapped while it was opened')
  }
  return { handle, stats }
}

/** A small file of the store (its marker, its pointers) read whole, or undefined when it is not there. */
export async function readSmallFile (path: string, maxBytes: number): Promise<string | undefined> {
  const opened = await openRegular(path, kind => new DirectoryStoreError(`${path} is ${kind}, not a file cidsync wrote: move it aside`))
  if (opened === undefined) return undefined
  const { handle, stats } = opened
  try {
    const tooLarge = new DirectoryStoreError(`${path} holds more than the ${maxBytes} bytes cidsync writes there: it is not cidsync's; move it aside`)
    if (stats.size > maxBytes) throw tooLarge
    const buffer = Buffer.alloc(maxBytes + 1)
    let filled = 0
    while (filled < buffer.byteLength) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.byteLength - filled, filled)
      if (bytesRead === 0) break
      filled += bytesRead
    }
    // It grew while it was read.
    if (filled > maxBytes) throw tooLarge
    return buffer.subarray(0, filled).toString('utf8')
  } finally {
    await handle.close()
  }
}

/**
 * A folder of the store held open without following a link. Names in it are reached through the
 * descriptor (`/proc/self/fd/N/NAME`), so a folder swapped for a link after it was opened leads
 * nowhere else. Where the system has no such names, the path is used (the check at open only).
 */
export class HeldDir {
  private constructor (private readonly handle: FileHandle, private readonly base: string) {}

  /**
   * Opens `path` (shown as `shown`), refused when it is a link or no directory. Undefined when
   * nothing is there and `missingOk`.
   */
  static async open (path: string, shown: string, missingOk?: false): Promise<HeldDir>
  static async open (path: string, shown: string, missingOk: true): Promise<HeldDir | undefined>
  static async open (path: string, shown: string, missingOk = false): Promise<HeldDir | undefined> {
    let handle: FileHandle
    try {
      handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
    } catch (err) {
      const code = errnoCode(err)
      if (code === 'ENOENT' && missingOk) return undefined
      if (code === 'ENOENT') throw new DirectoryStoreError(`${shown} is missing: check that the store's disk is mounted`, { cause: err })
      if (code === 'ENOTDIR' || code === 'ELOOP') {
        const found = await lstat(path).then(kindOf, () => 'no directory')
        throw new DirectoryStoreError(`${shown} is ${found}, not a directory of the store: nothing is written through it; move it aside`, { cause: err })
      }
      throw err
    }
    return new HeldDir(handle, fdPath(handle.fd) === undefined ? path : `/proc/self/fd/${handle.fd}`)
  }

  /** The path of `name` inside this folder, whatever happened to the folder's own path since. */
  at (name: string): string {
    return join(this.base, name)
  }

  async sync (): Promise<void> {
    await this.handle.sync()
  }

  async close (): Promise<void> {
    await this.handle.close()
  }
}
