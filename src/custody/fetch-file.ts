import { createReadStream, linkSync, lstatSync, renameSync, unlinkSync } from 'node:fs'
import { lstat, open, readdir, realpath, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { CidBuilder, type CidProfile } from '../content/index.js'
import { ContentIntegrityError, TargetExistsError, TargetPathError } from '../errors.js'
import { utimesTime } from './mtime.js'
import { contentMasterKey, fileKey } from './content-key.js'
import { openStream } from './seal-stream.js'
import { MAX_OBJECT_BYTES } from './layout.js'
import type { ContentRecord } from './record.js'
import type { ObjectCache } from './object-cache.js'
import { applyAttrs, defaultAttrs, type FileAttrs } from './file-attrs.js'
import { inCheckedDir, inCheckedDirSync, openedIn } from '../util/fd-path.js'

/** What the index row says a file holds. */
export interface FileRow {
  readonly cid: CID
  readonly size: number
  readonly mtimeMs: number
  readonly profile: CidProfile
}

export interface FetchFileInit {
  /** A record parsed with `parseContentRecord`, for the row's CID. */
  readonly record: ContentRecord
  readonly row: FileRow
  /** The final path, already checked to lie inside the target. */
  readonly target: string
  /**
   * Where the target's directory really is (its realpath) when it was checked; it must still be
   * there when the file is renamed into place. Absent: taken when the fetch starts.
   */
  readonly targetDir?: string
  /** The snapshot key the record names (required for sealed content). */
  readonly snapshotKey?: Uint8Array
  readonly objects: ObjectCache
  readonly signal?: AbortSignal
  /** Told of plaintext bytes written. */
  readonly onBytes?: (bytes: number) => void
  /**
   * The target held a file when it was checked, and it may be replaced (`--overwrite`). Else a
   * file found there when this one is renamed (one made since) is kept, and this one refused.
   */
  readonly replace?: boolean
  /**
   * `false`: the temp's bytes are not fsynced before the rename, for a check that removes the
   * file at once (`verify --content`). An fsync per file there slows the drill and protects
   * nothing. Absent: fsynced, as every file a user keeps must be.
   */
  readonly durable?: boolean
  /** Its mode and owner once verified and checked in place (absent: a user's usual file mode). */
  readonly attrs?: FileAttrs
}

/** Master keys derived for the snapshot keys a run passes (the same buffer for every file): HKDF once, not per file. */
const masters = new WeakMap<Uint8Array, Buffer>()

function masterKeyOf (snapshotKey: Uint8Array): Buffer {
  let master = masters.get(snapshotKey)
  if (master === undefined) {
    master = contentMasterKey(snapshotKey)
    masters.set(snapshotKey, master)
  }
  return master
}

/** The temp a fetch writes beside its target until it is verified (see {@link fetchFile}). */
const FETCH_TEMP = /^\.[\s\S]+\.cidsync-[0-9a-f]{12}\.part$/

/**
 * Temps are named by this process's random prefix and a count: unique without a random draw for
 * each, which costs a system call a file. The count wraps at 65,536, long after its earlier temps
 * were renamed or removed. A clash with another process's is as unlikely as with a random name,
 * and refused ('wx').
 */
const tempPrefix = randomBytes(4).toString('hex')
let tempCount = 0

/** A file's key from the snapshot key a run passes. */
export function fileKeyFor (snapshotKey: Uint8Array, cid: CID): Buffer {
  return fileKey(masterKeyOf(snapshotKey), cid)
}

/** Where a directory really is: a fetch checks it is still there before its rename. */
export async function realDir (dir: string): Promise<string> {
  return await realpath(dir)
}

/** A temp file's name beside its target: removed by {@link removeFetchTemps} when a kill leaves it. */
export function fetchTempFor (target: string): string {
  tempCount = (tempCount + 1) % 0x10000
  return join(dirname(target), `.${basename(target).slice(0, 64)}.cidsync-${tempPrefix}${tempCount.toString(16).padStart(4, '0')}.part`)
}

/**
 * Removes the temp files fetches killed midway left in `dir`, which must really be `expected`:
 * only regular files under the name {@link fetchFile} gives them, never the user's own files, and
 * never this process's.
 * Each is reached through the directory's descriptor, so a symlink swapped in for `dir` leads the
 * sweep nowhere. Answers how many it removed.
 */
export async function removeFetchTemps (dir: string, expected: string): Promise<number> {
  const refused = (now: string): Error => new TargetPathError(`${dir} is not where it was checked (it leads to ${now}): a symlink put in its way? Nothing is removed through it`)
  return await inCheckedDir(dir, expected, refused, async (at) => {
    let removed = 0
    // This process's own temps are left: one directory reached by two names is swept by each, and
    // a file of an earlier window may wait there for its batch's rename.
    const own = `.cidsync-${tempPrefix}`
    for (const name of (await readdir(at('.')).catch(() => [] as string[])).filter(n => FETCH_TEMP.test(n) && !n.includes(own))) {
      if ((await lstat(at(name)).catch(() => undefined))?.isFile() !== true) continue
      await rm(at(name), { force: true })
      removed++
    }
    return removed
  })
}

async function * spans (init: FetchFileInit): AsyncGenerator<Uint8Array> {
  const lastUse = init.record.objects.length > 1
  for (const [object, offset, length] of init.record.objects) {
    // A range past the object's end reads short; openStream or the CID check then refuses it.
    // Plain content is the file itself; a sealed object is never larger than a part.
    const bound = init.record.sealing === 'none' ? length : Math.max(offset + length, MAX_OBJECT_BYTES)
    // Plain content is the file itself, uploaded under its own profile; a sealed object under the upload's.
    const path = await init.objects.get(object, bound, init.signal, init.record.sealing === 'none' ? init.row.profile : undefined)
    if (length > 0) yield * createReadStream(path, { start: offset, end: offset + length - 1, highWaterMark: 1024 * 1024, signal: init.signal })
    if (lastUse) await init.objects.release(object)
  }
}

/** Link errors of filesystems without hard links: the no-clobber move falls back to a look, then a rename. */
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK'])

/**
 * Renames `temp` to `target`; unless `replace`, never over a file there. The check before the
 * fetch may be minutes old: a restore checks every file first, and renames a batch at a time. A
 * file the user made there since is theirs. A hard link fails on an existing name, atomically.
 * Synchronous: a name's calls are few and local, and a batch's run without a trip each to libuv.
 */
export function renameInto (temp: string, target: string, replace: boolean, shown = target): void {
  if (replace) { renameSync(temp, target); return }
  const exists = (): TargetExistsError => new TargetExistsError(`${shown} holds other content, put there while the restore ran: it was kept; add --overwrite to replace it`)
  try {
    linkSync(temp, target)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EEXIST') throw exists()
    if (code === undefined || !NO_LINKS.has(code)) throw err
    if (lstatSync(target, { throwIfNoEntry: false }) !== undefined) throw exists()
    renameSync(temp, target)
    return
  }
  unlinkSync(temp)
}

/** A verified temp file to rename to its target: `inode` is the file written. */
export interface Placement {
  readonly temp: string
  readonly target: string
  readonly inode: number
  readonly replace: boolean
}

/**
 * Puts verified temp files (their bytes fsynced, their mode, owner and mtime set on their
 * descriptors) in their targets' places, all in directory `dir`: only while it is still where it
 * was checked (`expectedDir`). The directory is reached through one descriptor, checked once; no
 * name is looked up by path after the check. So a directory swapped for a symlink in between
 * moves nothing anywhere else: a rename by path could put another user's decoy over a file
 * elsewhere. Answers each file's error, or undefined where it was placed.
 */
export function placeFiles (dir: string, expectedDir: string, files: readonly Placement[]): Array<Error | undefined> {
  const moved = (now: string): TargetPathError => new TargetPathError(`${dir} changed while a file was written into it (now at ${now}, not ${expectedDir}): a symlink put in its way? Nothing was written through it`)
  try {
    return inCheckedDirSync(dir, expectedDir, moved, (at) => files.map((file) => {
      try {
        const there = lstatSync(at(basename(file.temp)), { throwIfNoEntry: false })
        if (there === undefined || there.ino !== file.inode || !there.isFile()) throw moved(`${dir} without its temp file`)
        renameInto(at(basename(file.temp)), at(basename(file.target)), file.replace, file.target)
        return undefined
      } catch (err) {
        return err as Error
      }
    }))
  } catch (err) {
    return files.map(() => err as Error)
  }
}

/**
 * Brings one file back: its objects fetched (each verified against its CID), its chunks opened,
 * its plaintext hashed with the row's profile as it is written to a temp file beside the target.
 * The temp file becomes the target only when it hashes to the row's CID; otherwise nothing is
 * left and a {@link ContentIntegrityError} names the file. The temp's bytes are fsynced before
 * the rename, so the target is never torn; the rename itself is durable once the caller fsyncs
 * the target's directory (`get` does it once a directory, at the end of its run).
 */
export async function fetchFile (init: FetchFileInit): Promise<void> {
  const { record, row } = init
  if (record.cid !== row.cid.toString() || record.size !== row.size) throw new ContentIntegrityError(`the content record for ${row.cid.toString()} describes ${record.cid} of ${record.size} bytes: forged`)
  let plain: AsyncIterable<Uint8Array> = spans(init)
  if (record.sealing !== 'none') {
    if (init.snapshotKey === undefined) throw new ContentIntegrityError(`${row.cid.toString()} is sealed and no key was given`)
    plain = openStream(plain, { key: fileKeyFor(init.snapshotKey, row.cid), cid: row.cid, size: row.size })
  }
  const dir = dirname(init.target)
  const expectedDir = init.targetDir ?? await realpath(dir)
  const temp = fetchTempFor(init.target)
  const builder = new CidBuilder(row.profile)
  const handle = await open(temp, 'wx', 0o600)
  let written = 0
  let inode = 0
  try {
    try {
      inode = (await handle.stat()).ino
      // Made where it was meant to be, or nothing is written: a directory swapped for a symlink
      // before the open sent the temp elsewhere.
      if (!openedIn(handle.fd, temp, expectedDir, inode)) throw new TargetPathError(`${dir} changed while a file was written into it: a symlink put in its way? Nothing was written through it`)
      for await (const bytes of plain) {
        builder.update(bytes)
        written += bytes.byteLength
        if (written > row.size) throw new ContentIntegrityError(`the stored content of ${row.cid.toString()} is longer than its ${row.size} bytes`)
        await handle.write(bytes)
        init.onBytes?.(bytes.byteLength)
      }
      const got = builder.finish().toString()
      if (got !== row.cid.toString()) throw new ContentIntegrityError(`the stored content of ${row.cid.toString()} hashes to ${got}: damaged or forged, nothing written`)
      // Verified: its owner, mode and mtime, on the descriptor (never by path, which a swapped symlink could redirect).
      await applyAttrs(handle, init.attrs ?? defaultAttrs())
      await handle.utimes(Date.now() / 1000, utimesTime(row.mtimeMs))
      if (init.durable !== false) await handle.sync()
    } finally {
      await handle.close()
    }
    const [placing] = placeFiles(dir, expectedDir, [{ temp, target: init.target, inode, replace: init.replace === true }])
    if (placing !== undefined) throw placing
  } catch (err) {
    await rm(temp, { force: true })
    throw err
  }
}
