import { readdir, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import type { CID } from 'multiformats/cid'
import { CidsyncError, ExportWriteError } from '../errors.js'
import type { Repository } from '../sync/index.js'
import { ROOT_SHAPE } from '../snapshot/index.js'
import { failpoint } from '../util/failpoint.js'
import { fsyncPath } from '../util/fsync.js'
import { CarFile } from './car-file.js'
import { ExportWalk, type ExportedHistory, type ExportProgress, type ExportWalkInit } from './export-walk.js'
import { processAlive } from '../util/process-alive.js'
import type { ProgressEvent, ProgressOptions } from '../util/progress.js'

/** Told after each object is in the CAR. */
export type ExportProgressEvent = ProgressEvent<'export:object', ExportProgress>

export interface ExportInit extends ExportWalkInit, ProgressOptions<ExportProgressEvent> {
  /** Where the CAR goes; nothing is ever left there but a whole one. */
  readonly file: string
}

export interface ExportResult extends ExportedHistory {
  readonly file: string
  readonly blocks: number
  /** Bytes of the CAR file. */
  readonly carBytes: number
}

let exportRuns = 0
const TEMP_SUFFIX = '.cidsync-export'

/**
 * The temp file an export writes: beside FILE (one rename), hidden, one per run (`<pid>-<n>`): two
 * exports to one FILE at once each rename their own CAR (a shared name let one remove the other's
 * file and rename the other's half-written one over FILE, and say it was done).
 */
export function exportTempPath (file: string, run = `${process.pid}-${++exportRuns}`): string {
  return join(dirname(file), `.${basename(file)}.${run}${TEMP_SUFFIX}`)
}

/** The temp files of FILE's exports killed before they ended (their process gone), and of the shared name older versions used. */
async function removeDeadTemps (file: string): Promise<void> {
  const prefix = `.${basename(file)}.`
  for (const name of await readdir(dirname(file)).catch(() => [] as string[])) {
    if (!name.startsWith(prefix) || !name.endsWith(TEMP_SUFFIX)) continue
    const run = name.slice(prefix.length, -TEMP_SUFFIX.length)
    const pid = /^(\d{1,10})-\d{1,10}$/.exec(run)?.[1]
    if (run !== '' && (pid === undefined || processAlive(Number(pid)))) continue
    // Best effort: one this user may not remove (another's, in a sticky /tmp) must not stop the export.
    await rm(join(dirname(file), name), { force: true }).catch(() => {})
  }
}

/**
 * Writes the chain at the pointer (or at `at`) as a CAR v1 rooted at its plain root: every publish
 * of its history and every segment they name, and with `content` every content object its records
 * name, then the root's own nodes, which link them all (made from what was walked; the header,
 * written first, is given the root's CID at the end). The store hands over each object's blocks,
 * each checked against its CID (ObjectStore's `blocks`): a service's gateway answer is rebuilt
 * into blocks under the object's profile, the embedded store's packs are read in place. Wrong
 * bytes fail the export (exit 4). Memory stays flat: blocks go to the CAR's writes in order as
 * they are checked (12 MiB of write buffers: {@link CarFile}). The CAR is written to a temp
 * file beside FILE, fsynced once and renamed over it: FILE is whole or untouched.
 */
export async function exportCar (repository: Repository, init: ExportInit): Promise<ExportResult> {
  const file = resolve(init.file)
  const temp = exportTempPath(file)
  const clients = repository.home
  const walk = await ExportWalk.open(repository, init)
  try {
    await removeDeadTemps(file)
    const cannotWrite = (err: unknown): CidsyncError => err instanceof CidsyncError ? err : new ExportWriteError(`could not write ${file} (through ${temp}): ${(err as Error).message}; nothing was left under FILE: give a FILE in a directory that exists, is writable and has room`, { cause: err })
    // Opened before anything is fetched: a FILE that cannot be written fails at once, named. Its
    // header names the plain root once it is made: a CID of the same shape until then.
    // Its writes run on while the next blocks are fetched and hashed: see CarFile for the bounds.
    const car = await CarFile.create(temp, ROOT_SHAPE).catch((err: unknown) => { throw cannotWrite(err) })
    let blocks = 0
    let writeFailure: CidsyncError | undefined
    let carRoot = ''
    const sink = async (cid: CID, bytes: Uint8Array): Promise<void> => {
      // A write that fails (a full disk) is the export's failure, named, not the fetch's.
      await car.put(cid, bytes).catch((err: unknown) => { writeFailure = cannotWrite(err); throw writeFailure })
      blocks++
    }
    try {
      await clients.objects.blocks(walk.objects(), sink, {
        signal: init.signal,
        onObject: (object, walked) => { const detail = walk.done(object, walked.size); init.onProgress?.({ type: 'export:object', detail }) },
        failure: (object, err) => writeFailure ?? walk.failure(object, err, 'no CAR was written')
      })
      // The root's own nodes last, the root first: a cut before them sends every object whole before
      // the root that links them all (import), and a reader meets each node before those under it.
      const plain = walk.plainRoot()
      for (const block of plain.blocks) await sink(block.cid, block.bytes)
      car.nameRoot(plain.root)
      carRoot = plain.root.toString()
      // Written whole and fsynced before the rename.
      await car.close().catch((err: unknown) => { throw cannotWrite(err) })
    } catch (err) {
      await car.abort()
      throw err
    }
    failpoint('export:before-rename')
    await rename(temp, file).catch((err: unknown) => { throw cannotWrite(err) })
    await fsyncPath(dirname(file))
    return { file, ...walk.exported(carRoot), blocks, carBytes: (await stat(file)).size }
  } catch (err) {
    await rm(temp, { force: true })
    throw err
  }
}
