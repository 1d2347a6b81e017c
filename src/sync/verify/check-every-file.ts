import { CID } from 'multiformats/cid'
import { cidProfile, isCidProfileName, type CidProfile } from '../../content/index.js'
import { ObjectMemory, SealPool, Slots, SMALL_FILE_BYTES, unsealFile, unsealPackFiles, type ContentRecord, type UnsealFileInit } from '../../custody/index.js'
import { ContentIntegrityError, ServiceDataDamagedError } from '../../errors.js'
import type { Index, StoredFile } from '../../index/index.js'
import type { ObjectHome } from '../../store/index.js'
import { readingKey } from '../../snapshot/index.js'
import { eachAtOnce } from '../../util/each-at-once.js'
import { safeText } from '../../util/safe-text.js'
import { boundHeapGrowth, CollectEvery } from '../../util/release-memory.js'
import { isUnusable, missingKey, SNAPSHOT_PROFILE } from '../read/index.js'
import { firstUsable, RESTORE_CONCURRENCY, RESTORE_MEMORY_BYTES, RESTORE_PACK_BATCH, RESTORE_THREADS, STREAMED_AT_ONCE } from '../restore/index.js'

/**
 * Why a file does not come back that says it would not restore (the drill's finding, named), not
 * that the drill could not run: its bytes or record are wrong, its object is gone, or the local
 * service's own data is damaged.
 */
export function notRestorable (err: unknown): boolean {
  return err instanceof ContentIntegrityError || err instanceof ServiceDataDamagedError || isUnusable(err)
}

/**
 * The record a restore would use for content `cid`: the newest that parses (restore's own pick),
 * so a damaged newer one beside a good one is no false alarm. Throws when none can be used.
 */
export function recordOf (index: Index, cid: string, rows = index.content.lookup(cid)): ContentRecord {
  const record = firstUsable(rows)
  if (typeof record === 'string') throw new ContentIntegrityError(`no content record of it can be used: ${record}`)
  return record
}

/** A file that did not come back: the object that failed, the file (`folder/path`), and why. */
export interface FileFailure { readonly cid: string, readonly message: string, readonly file: string }

/** Stored `file` did not come back from `object` for `err`: its name shown with control characters escaped. */
export function fileFailure (file: StoredFile, object: string, err: unknown): FileFailure {
  const path = `${file.folder}/${file.path}`
  return { cid: object, file: path, message: `the stored file ${safeText(path)} (content ${file.cid}) does not come back from object ${object}: ${(err as Error).message}` }
}

export interface CheckEveryFileInit {
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
  /** Brings back a file stored as plain content (not sealed) on its own: its failure, or null. */
  readonly plain: (file: StoredFile) => Promise<FileFailure | null>
}

/** Files looked up and checked together: a window of the walk. */
const WINDOW = 2_000

/** Files that do not come back named at most; the others are counted. */
export const MAX_FAILED_FILES = 20

/**
 * Objects that do not come back, past which the walk stops: each one a service fails may cost its
 * retries, and a store gone whole would take hours to walk. A damaged pack fails all its files:
 * the bound counts objects, so one pack does not end the walk before the next damage is found.
 */
export const MAX_FAILED_OBJECTS = 20

/** The files a walk found would not come back: the first named, all counted, with their objects. */
export interface FailedFiles {
  readonly files: readonly FileFailure[]
  readonly count: number
  readonly objects: number
  /** The walk stopped at {@link MAX_FAILED_OBJECTS}: files after it were not checked. */
  readonly more: boolean
}

/** A sealed file of the window, ready for its thread. */
interface Check {
  readonly file: StoredFile
  readonly record: ContentRecord
  readonly profile: CidProfile
  readonly key: Buffer
  /** The first of its content's rows in the walk: counted once checked (other sizes or profiles are checked, not counted). */
  readonly counts: boolean
}

/**
 * Brings every stored file of `files` (a walk of a drill's index, in the order of their objects)
 * back as `restore --files` would, in memory alone. Each pack is read once and verified; its files
 * are opened and hashed to their CIDs on the sealing threads; a large file's parts stream to its
 * thread. Nothing is written. Stricter than a restore from the embedded service: every object is
 * hashed whole, as a gateway's answer to another device would be, so damage anywhere in a pack
 * fails the drill, not only damage in the blob of a file read. Answers how many contents came
 * back, and the files that did not, in the walk's order: up to {@link MAX_FAILED_FILES} named,
 * every one counted, until {@link MAX_FAILED_OBJECTS} objects failed. A network failure or a
 * missing key throws.
 */
export async function checkEveryFile (clients: ObjectHome, index: Index, files: Iterator<StoredFile>, init: CheckEveryFileInit): Promise<{ checked: number, failed: FailedFiles }> {
  boundHeapGrowth()
  const pool = new SealPool(RESTORE_THREADS)
  const memory = new ObjectMemory(RESTORE_MEMORY_BYTES, async (cid, options) => await clients.objects.getBytes(cid, SNAPSHOT_PROFILE, {
    ...options, hash: async (slabs) => await pool.hashObject(slabs, options.signal), hashing: () => pool.hashStream(options.signal)
  }))
  const keys = new Map<string, Buffer>()
  const keyOf = (record: ContentRecord): Buffer => {
    const key = keys.get(record.keyId) ?? readingKey(init.stateDir, { keyId: record.keyId, salt: record.keySalt }, init.passphrase)
    keys.set(record.keyId, key)
    return key
  }
  const streamOf = clients.objects.stream
  const streams = streamOf !== undefined
  const streaming = new Slots(STREAMED_AT_ONCE)
  // A streamed file's leavings lie outside V8's heap: collected every 64 MiB of them, as a restore does.
  const collect = new CollectEvery()
  let checked = 0
  let lastCid = ''
  const named: FileFailure[] = []
  const objects = new Set<string>()
  let count = 0
  const answer = (more: boolean): { checked: number, failed: FailedFiles } => ({ checked, failed: { files: named, count, objects: objects.size, more } })
  try {
    for (;;) {
      const window: StoredFile[] = []
      while (window.length < WINDOW) {
        const next = files.next()
        if (next.done === true) break
        window.push(next.value)
      }
      if (window.length === 0) return answer(false)
      const failures = new Map<StoredFile, FileFailure>()
      const failed = (file: StoredFile, object: string, err: unknown): void => {
        if (init.signal?.aborted === true) throw err
        const noKey = missingKey(err)
        if (noKey !== undefined) throw noKey
        if (!notRestorable(err)) throw err
        failures.set(file, fileFailure(file, object, err))
      }
      const sealed: Check[] = []
      // The window's records in one statement, not one a file.
      const records = index.content.lookupMany([...new Set(window.map(f => f.cid))])
      for (const file of window) {
        const counts = file.cid !== lastCid
        lastCid = file.cid
        let record: ContentRecord | undefined
        try {
          record = recordOf(index, file.cid, records.get(file.cid) ?? [])
          if (!isCidProfileName(file.cidProfile)) throw new ContentIntegrityError(`its CID profile ${JSON.stringify(file.cidProfile)} is not one this cidsync knows`)
          if (record.sealing === 'none') {
            const plainFailed = await init.plain(file)
            if (plainFailed === null) checked += counts ? 1 : 0
            else failures.set(file, plainFailed)
            continue
          }
          sealed.push({ file, record, profile: cidProfile(file.cidProfile), key: keyOf(record), counts })
        } catch (err) {
          failed(file, record?.objects[0]?.[0] ?? file.cid, err)
        }
      }
      // Every reader of a pack is announced before any reads it: the pack is fetched once, and
      // let go when the last is done.
      for (const c of sealed) {
        const pack = packOf(c, streams)
        if (pack !== undefined) memory.expect(pack, 1, endOf(c.record))
      }
      const inputs = ({ file, record, profile, key }: Check): Omit<UnsealFileInit, 'memory' | 'pool'> => ({
        record, row: { cid: CID.parse(file.cid), size: file.size, mtimeMs: file.mtimeMs, profile }, target: '', snapshotKey: key, signal: init.signal, check: true
      })
      await eachAtOnce(unitsOf(sealed, streams), RESTORE_CONCURRENCY, async (unit) => {
        const first = unit[0] as Check
        const pack = packOf(first, streams)
        if (pack === undefined) {
          // Parts streamed block by block where the store can (the embedded service), else held.
          const stream = streamOf === undefined ? undefined : (cid: string, maxBytes: number, signal?: AbortSignal) => streamOf(cid, { maxBytes, signal, lend: true })
          try {
            await streaming.run(async () => await unsealFile({ ...inputs(first), memory, pool, stream }), init.signal).finally(() => { collect.note(first.file.size) })
            checked += first.counts ? 1 : 0
          } catch (err) {
            failed(first.file, first.record.objects[0]?.[0] ?? first.file.cid, err)
          }
          return
        }
        const answers = await unsealPackFiles(unit.map(inputs), memory, pool, init.signal)
        for (const [i, c] of unit.entries()) {
          const answer = answers[i]
          if (answer instanceof Error) failed(c.file, pack, answer)
          else checked += c.counts ? 1 : 0
        }
      })
      for (const file of window) {
        const failure = failures.get(file)
        if (failure === undefined) continue
        count++
        objects.add(failure.cid)
        if (named.length < MAX_FAILED_FILES) named.push(failure)
      }
      // Stopped here: more only if files are left to walk.
      if (objects.size >= MAX_FAILED_OBJECTS) return answer(files.next().done !== true)
    }
  } finally {
    files.return?.()
    await pool.close()
  }
}

/**
 * The object a file is read from with others (a pack held in memory), or undefined for a file read
 * alone: one of several parts, or a large file the store streams (as a restore reads them).
 */
function packOf (c: Check, streams: boolean): string | undefined {
  return c.record.objects.length === 1 && !(streams && c.file.size >= SMALL_FILE_BYTES) ? c.record.objects[0]?.[0] : undefined
}

function endOf (record: ContentRecord): number {
  const [, offset, length] = record.objects[0] as readonly [string, number, number]
  return offset + length
}

/**
 * Large files first (each alone), then the files of each pack together in its order, a batch at
 * most a message to its thread: a pack's readers come one after another, so it is read once.
 */
function unitsOf (sealed: readonly Check[], streams: boolean): Check[][] {
  const alone = sealed.filter(c => packOf(c, streams) === undefined).map(c => [c])
  const packed = sealed.filter(c => packOf(c, streams) !== undefined).sort((a, b) => {
    const [objectA, offsetA] = a.record.objects[0] as readonly [string, number, number]
    const [objectB, offsetB] = b.record.objects[0] as readonly [string, number, number]
    return objectA < objectB ? -1 : objectA > objectB ? 1 : offsetA - offsetB
  })
  const units: Check[][] = []
  for (const c of packed) {
    const last = units.at(-1)
    if (last !== undefined && last.length < RESTORE_PACK_BATCH && packOf(last[0] as Check, streams) === packOf(c, streams)) last.push(c)
    else units.push([c])
  }
  return [...alone, ...units]
}
