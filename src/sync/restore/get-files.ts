import { lstat, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { cidProfile, isCidProfileName, type CidProfile, type CidProfileName } from '../../content/index.js'
import { SMALL_FILE_BYTES, type ContentRecord, removeFetchTemps } from '../../custody/index.js'
import { ContentIntegrityError, TargetExistsError, UsageError } from '../../errors.js'
import type { Entry, Index } from '../../index/index.js'
import type { Repository } from '../repository.js'
import { readingKey } from '../../snapshot/index.js'
import { eachAtOnce } from '../../util/each-at-once.js'
import { boundHeapGrowth } from '../../util/release-memory.js'
import type { ProgressEvent, ProgressOptions } from '../../util/progress.js'
import { syncRenames } from './fsync-renames.js'
import { prepareTarget } from './safe-target.js'
import { makeDirs } from '../../util/make-dirs.js'
import { restoredAttrs, type AttrsNote } from './attrs.js'
import { placeEntries, type EntryJob } from './entries.js'
import { promoteKeptFirsts, splitRows } from './link-groups.js'
import { PlacedFile, type GetOutcome } from './get-outcome.js'
import { checkFolders, diskFull, RecordsAhead, removeDeadFetches, targetRoot, usableRecord, type RecordLookup } from './targets.js'
import { notFound, tryNewerRecords, type RecordFallback } from './newer-records.js'
import { RecordTable } from './record-table.js'
import { byRangeWhereFew, fetchOrder, packOf, RESTORE_CONCURRENCY, RESTORE_PACK_BATCH, RESTORE_WINDOW, restoreThreads, type Job } from './jobs.js'
import { FileFetcher } from './file-fetcher.js'
import { unstoredInPlace, whatIsThere } from './what-is-there.js'
import { wayChecker } from './way-checker.js'
import { STATE_NAMES } from '../../config/index.js'
import { failpoint } from '../../util/failpoint.js'

export { checkFolders, targetRoot, usableRecord } from './targets.js'
export { RESTORE_CONCURRENCY } from './jobs.js'

/** Errors of a name's place, not of its content: another name of its hard-link group may still be made. */
const PLACE_ERRORS = new Set(['EACCES', 'EPERM', 'ENOTDIR', 'EISDIR', 'ELOOP', 'ENAMETOOLONG', 'EROFS', 'EEXIST', 'ENOENT', 'EXDEV', 'EMLINK', 'EBUSY', 'ETXTBSY'])

export interface GetFilesInit extends ProgressOptions<GetFilesProgress> {
  /** The rows to bring back (this device's index, or a past one), chosen by the caller. */
  readonly rows: readonly Entry[]
  /** `DIR/folder/path` for each file; absent: each folder's configured path. */
  readonly to?: string
  /** Replace a local file that holds other content. */
  readonly overwrite?: boolean
  /** This device's id: a local file that matches its own row is an older version, replaced by a newer one. */
  readonly own?: string
  /** Told once of each thing a restore could not give entries as recorded (a mode unknown, owners not root's to set). */
  readonly onNote?: (note: AttrsNote) => void
  /** Where each row's content records come from; absent: `index`. */
  readonly records?: RecordLookup
  /** Asked in turn, once each, for other records of files whose objects were not found. */
  readonly fallbacks?: readonly RecordFallback[]
}

/** What a file's or an entry's outcome says: its path, what became of it, and why if it failed. */
interface OutcomeDetail { readonly path: string, readonly outcome: GetOutcome['outcome'], readonly reason?: string, readonly code?: string }

export type GetFilesProgress =
  | ProgressEvent<'get:start', { readonly files: number, readonly bytes: number }>
  | ProgressEvent<'get:bytes', { readonly bytes: number }>
  | ProgressEvent<'get:file', OutcomeDetail>
  /** A symlink or a directory, put in place after the files. */
  | ProgressEvent<'get:entry', { readonly kind: 'symlink' | 'dir' } & OutcomeDetail>

export type { GetOutcome } from './get-outcome.js'

/**
 * Brings files back from the service (docs/content-format.md, "Restore"): each through the
 * gateways, opened, hashed to its row's CID and renamed into place; a file already right is
 * skipped, a different one kept unless `overwrite`. One file's failure does not stop the rest:
 * every outcome is answered, for the caller to count and exit on.
 */
export async function getFiles (repository: Repository, index: Index, init: GetFilesInit): Promise<GetOutcome[]> {
  const { config } = repository
  boundHeapGrowth()
  const fetchDir = join(config.stateDir, STATE_NAMES.contentFetch)
  await removeDeadFetches(fetchDir)
  const fetcher = new FileFetcher(repository.objects, {
    threads: restoreThreads(init.rows.reduce((sum, r) => r.deleted || r.size < SMALL_FILE_BYTES ? sum : sum + r.size, 0)),
    scratchDir: join(fetchDir, String(process.pid)),
    signal: init.signal,
    onBytes: (bytes) => { init.onProgress?.({ type: 'get:bytes', detail: { bytes } }) },
    written: (job) => { written(job) },
    failed: (err, job) => { failedFetching(err, job.row, job.at) }
  })
  // A --to dir made here is private: the tree under it keeps its recorded modes.
  if (init.to !== undefined) await makeDirs(init.to, 0o700)
  const notes = new Set<AttrsNote>()
  const note = (what: AttrsNote): void => { if (!notes.has(what)) { notes.add(what); init.onNote?.(what) } }
  const live = init.rows.filter(r => !r.deleted)
  // Hard links: the first name of a group is fetched, the others linked to it once it is in place.
  const split = splitRows(live)
  const { files: rows, entries } = split
  let { linked } = split
  // New directories are made no wider than recorded (and writable by their owner while filled).
  const dirModes = new Map(entries.filter(r => r.meta?.kind === 'dir').map(r => [`${r.folder}/${r.path}`, r.meta?.mode ?? 0o755]))
  const dirMode = (folder: string) => (parts: readonly string[]): number => {
    const recorded = dirModes.get(`${folder}/${parts.join('/')}/`) ?? dirModes.get(`${parts.join('/')}/`)
    return recorded === undefined ? 0o755 : (recorded | 0o700) & 0o777
  }
  await checkFolders(config, init.to, live)
  // Every `get:file` to come: the other names of hard links too, whose bytes are the first's.
  init.onProgress?.({ type: 'get:start', detail: { files: rows.length + linked.length, bytes: rows.reduce((sum, r) => sum + r.size, 0) } })
  const outcomes: Array<GetOutcome | undefined> = new Array(rows.length)
  const placing = { config, to: init.to }
  const told = (outcome: GetOutcome): void => { init.onProgress?.({ type: 'get:file', detail: { path: outcome.path, outcome: outcome.outcome, ...(outcome.reason === undefined ? {} : { reason: outcome.reason, code: outcome.code }) } }) }
  // A file whose objects were not found is told once its fallbacks were tried: it may yet come back.
  const fallbacks = init.fallbacks ?? []
  const done = (at: number, outcome: GetOutcome): void => {
    outcomes[at] = outcome
    if (fallbacks.length === 0 || !notFound(outcome)) { tried.delete(at); told(outcome) }
  }
  const keys = new Map<string, Buffer>()
  // Directories written into, each cleared once of the temps a killed run left (a kill between a
  // temp's write and its rename leaves one, and a rerun may skip the file as already right); a
  // file waits for its directory's sweep, so no sweep removes a temp of this run.
  const sweeps = new Map<string, Promise<number>>()
  const dirs = new Map<string, Promise<{ readonly targetDir: string, readonly made: boolean }>>()
  // Each directory a file was renamed into, with its root and the files: fsynced once at the end (see below).
  const renamed = new Map<string, { root: string, files: number[] }>()
  // The jobs of the window being brought back; what was fetched for each file is forgotten once it
  // is in place, kept only for those whose objects were not found (a newer record may serve them).
  let jobs: Job[] = []
  const tried = new Map<number, ContentRecord>()
  /** Files still to check and fetch, this window's included. */
  let left = 0
  // A folder's own path must be there: a missing one is an unmounted disk, not a place to make.
  const folderThere = async (folder: string, root: string): Promise<void> => {
    if (init.to === undefined && !(await stat(root).catch(() => undefined))?.isDirectory()) throw new UsageError(`the folder ${folder} is not at ${root} (an unmounted disk?): mount it; on a new device, create it (\`mkdir -p ${root}\`); or bring the file back with --to DIR`)
  }
  // Looked up a batch of rows at a time: the rows are checked in order.
  const lookup = init.records ?? ((cids: readonly string[]) => index.content.lookupMany(cids))
  let records = new RecordsAhead(lookup, rows)
  /** A row whose record is usable, with where it goes. */
  interface Checked { readonly row: Entry, readonly at: number, readonly record: ContentRecord, readonly profile: CidProfile, readonly root: string, readonly components: string[], readonly dirKey: string }
  /** Row `at`'s usable record, checked in order before any directory is made; undefined when it has none (told). */
  const check = (row: Entry, at: number): ContentRecord | undefined => {
    try {
      init.signal?.throwIfAborted()
      const record = usableRecord(index, row, records.of(at))
      if (typeof record === 'string') { unstored.push({ row, at, reason: record }); return undefined }
      if (!isCidProfileName(row.cidProfile)) throw new ContentIntegrityError(`${row.folder}/${row.path} has CID profile ${JSON.stringify(row.cidProfile)}, which this cidsync does not know: upgrade cidsync`)
      return record
    } catch (err) {
      failed(err, row, at)
      return undefined
    }
  }
  /** Rows whose content is not stored, told once their place was looked at: one already right there is said so. */
  let unstored: Array<{ readonly row: Entry, readonly at: number, readonly reason: string }> = []
  const tellUnstored = async (): Promise<void> => {
    const rowsLeft = unstored
    unstored = []
    // Each directory on the way looked at once, for every row.
    const inTheWay = wayChecker()
    await eachAtOnce(rowsLeft, RESTORE_CONCURRENCY, async ({ row, at, reason }) => {
      // Looked at through real directories alone.
      const inPlace = async (): Promise<boolean> => {
        const { root, components } = targetRoot(config, init.to, row)
        return await inTheWay(root, components.slice(0, -1)) === undefined && unstoredInPlace(await lstat(join(root, ...components)).catch(() => undefined), row)
      }
      if (await inPlace().catch(() => false)) done(at, new PlacedFile(row, 'already-there', placing))
      else done(at, { path: `${row.folder}/${row.path}`, outcome: 'not-stored', reason, code: 'ERR_CONTENT_NOT_STORED' })
    })
  }
  /** Where row `at` goes, once its window comes. */
  const place = (row: Entry, at: number, record: ContentRecord): Checked | undefined => {
    try {
      const { root, components } = targetRoot(config, init.to, row)
      return { row, at, record, profile: cidProfile(row.cidProfile as CidProfileName), root, components, dirKey: JSON.stringify([root, ...components.slice(0, -1)]) }
    } catch (err) {
      failed(err, row, at)
      return undefined
    }
  }
  /**
   * Each directory made and checked once a run: the files after the first reuse where it really
   * is, which fetchFile checks again just before each rename (a symlink swapped in meanwhile
   * changes it, and the file is refused). A failure is this file's, and the next file of the
   * directory tries again.
   */
  const dirOf = async ({ row, root, components, dirKey }: Checked): Promise<{ readonly targetDir: string, readonly made: boolean }> => {
    let prepared = dirs.get(dirKey)
    if (prepared === undefined) {
      prepared = folderThere(row.folder, root).then(async () => await prepareTarget(root, [...components.slice(0, -1), '.'], dirMode(row.folder)))
      dirs.set(dirKey, prepared)
      prepared.catch(() => { dirs.delete(dirKey) })
    }
    return await prepared
  }
  const prepare = async (checked: Checked): Promise<void> => {
    const { row, at, record, profile, root, components } = checked
    const shown = `${row.folder}/${row.path}`
    try {
      init.signal?.throwIfAborted()
      const { targetDir, made } = await dirOf(checked)
      const target = join(root, ...components)
      let sweep = sweeps.get(dirname(target))
      if (sweep === undefined) {
        sweep = made ? Promise.resolve(0) : removeFetchTemps(dirname(target), targetDir)
        sweeps.set(dirname(target), sweep)
      }
      await sweep
      const attrs = restoredAttrs(row.meta, note)
      const there = await whatIsThere({
        row, profile, attrs, target, targetDir, made, overwrite: init.overwrite === true, signal: init.signal,
        mine: () => init.own === undefined ? undefined : index.entries.get(init.own, row.folder, row.path),
        stored: (cid) => index.content.lookup(cid).length > 0
      })
      if (there.kind === 'done') { done(at, new PlacedFile(row, there.outcome, placing)); return }
      if (there.kind === 'kept') { done(at, { path: shown, outcome: 'kept-different', target, code: 'ERR_TARGET_EXISTS', reason: there.reason }); return }
      let key: Buffer | undefined
      if (record.sealing !== 'none') {
        key = keys.get(record.keyId) ?? readingKey(config.stateDir, { keyId: record.keyId, salt: record.keySalt }, repository.passphrase)
        keys.set(record.keyId, key)
      }
      // A large file's parts, read from the embedded service's store, go to its thread as they
      // are read (each block verified first) instead of each being held whole: memory stays at a
      // few blocks a file, and several large files are opened at once.
      const streamed = record.sealing !== 'none' && record.size >= SMALL_FILE_BYTES && fetcher.streams
      fetcher.warm(left)
      jobs.push({ at, row, record, profile, root, target, targetDir, key, streamed, replace: there.replace, attrs })
      if (fallbacks.length > 0) tried.set(at, record)
    } catch (err) {
      failed(err, row, at)
    }
  }
  /**
   * Names whose content could not be fetched or written (not their place): another name of their
   * hard-link group would fetch the same content and fail the same way, so none is promoted.
   */
  const contentFailed = new Set<string>()
  const failedFetching = (err: unknown, row: Entry, at: number): void => {
    failed(err, row, at)
    const code = (err as { code?: unknown } | undefined)?.code
    // An error of the name's place (its directory) is not the content's: another place may take it.
    if (typeof code !== 'string' || !PLACE_ERRORS.has(code)) contentFailed.add(`${row.folder}/${row.path}`)
  }
  const failed = (err: unknown, row: Entry, at: number): void => {
    if (init.signal?.aborted === true) throw err
    // One made there while the restore ran (checked absent): kept, as one found at the check is.
    if (err instanceof TargetExistsError) { done(at, { path: `${row.folder}/${row.path}`, outcome: 'kept-different', code: err.code, reason: err.message }); return }
    const error = diskFull(err, config, init.to, row.folder) ?? err as Error & { code?: unknown }
    done(at, { path: `${row.folder}/${row.path}`, outcome: 'failed', reason: error.message, code: typeof error.code === 'string' ? error.code : 'ERR_CIDSYNC' })
  }
  /**
   * A file's bytes were fsynced before its rename; its rename (and its directory, when this run
   * made it) is durable once these are: a power cut before leaves it missing, never torn, and the
   * next run fetches it. Once a directory, not once a file: each is synced once, then forgotten.
   */
  const syncRenamed = async (): Promise<void> => {
    const dirsRenamed = new Map(renamed)
    renamed.clear()
    await syncRenames(dirsRenamed, (at, err) => {
      const row = rows[at] as Entry
      const error = diskFull(err, config, init.to, row.folder) ?? err as Error
      outcomes[at] = { path: `${row.folder}/${row.path}`, outcome: 'failed', reason: `written, but not made durable: ${error.message}`, code: 'ERR_CIDSYNC' }
    })
  }
  /** Told once `job`'s file is in its place, renamed after its batch was made durable. */
  const written = (job: Job): void => {
    const { row, target, at } = job
    const into = renamed.get(dirname(target)) ?? { root: job.root, files: [] }
    into.files.push(at)
    renamed.set(dirname(target), into)
    done(at, new PlacedFile(row, 'written', placing))
    failpoint('get:written')
  }
  /**
   * Checks and brings back `rows` from `from` on, made durable and renamed. Every record is
   * checked first, held in a few numbers each (RecordTable); then the files come back a window
   * at a time in the order of their packs: what is held for a file to fetch does not grow with
   * the tree, and each pack is still read once.
   */
  const bringFrom = async (from: number): Promise<void> => {
    const table = new RecordTable(rows.length - from)
    for (let at = from; at < rows.length; at++) {
      const row = rows[at] as Entry
      const record = check(row, at)
      if (record !== undefined) table.set(at - from, record, row.cid as string, row.size)
    }
    await tellUnstored()
    const order = table.order()
    for (let start = 0; start < order.length; start += RESTORE_WINDOW) {
      left = order.length - start
      const checked = [...order.subarray(start, start + RESTORE_WINDOW)].flatMap((i) => {
        const row = rows[from + i] as Entry
        const record = table.get(i, row.cid as string, row.size)
        return record === undefined ? [] : place(row, from + i, record) ?? []
      })
      await bringWindow(checked)
    }
    await fetcher.finish()
  }
  const bringWindow = async (checked: readonly Checked[]): Promise<void> => {
    // The directories are made ahead, several at once: the files of one directory wait on it
    // together, so one directory after another left this thread idle.
    const firsts = [...new Map(checked.map(c => [c.dirKey, c])).values()]
    const ahead = eachAtOnce(firsts, RESTORE_CONCURRENCY, async (c) => { if (init.signal?.aborted !== true) await dirOf(c).catch(() => {}) })
    await eachAtOnce(checked, RESTORE_CONCURRENCY, prepare)
    await ahead
    const ordered = fetchOrder(byRangeWhereFew(jobs, fetcher.streams))
    jobs = []
    fetcher.expect(ordered)
    // A pack's files go to a sealing thread a batch at a time: a message each way a batch.
    const units: Job[][] = []
    for (const job of ordered) {
      const last = units.at(-1)
      const pack = packOf(job)
      if (pack !== undefined && last !== undefined && last.length < RESTORE_PACK_BATCH && packOf(last[0] as Job) === pack) last.push(job)
      else units.push([job])
    }
    await eachAtOnce(units, RESTORE_CONCURRENCY, async (unit) => { await (packOf(unit[0] as Job) === undefined ? fetcher.bring(unit[0] as Job) : fetcher.bringPack(unit)) })
  }
  try {
    // A window at a time, every file is checked and its directory made; then the files to fetch
    // are brought back in an order that keeps memory bounded (see ObjectMemory): large files
    // first, then the files of each pack one after another.
    await bringFrom(0)
    // A hard link's first name kept as the user's own file, or not brought back there (its
    // directory in the way): the next name of its group is fetched instead, and the others linked
    // to that one. Bounded: each round takes a name off the links.
    const rounds = linked.length
    for (let round = 0; round < rounds; round++) {
      const promoted = promoteKeptFirsts(linked, new Set(outcomes.flatMap(o => o?.outcome === 'kept-different' || (o?.outcome === 'failed' && !contentFailed.has(o.path)) ? [o.path] : [])))
      if (promoted.rows.length === 0) break
      linked = promoted.linked
      const from = rows.length
      rows.push(...promoted.rows)
      records = new RecordsAhead(lookup, rows)
      await bringFrom(from)
    }
    // Files whose objects were not found, with a record naming others (a repack's): each bounded to one retry a fallback.
    await tryNewerRecords({
      fallbacks, rows, outcomes, records: tried,
      retry: async (ats, others) => {
        for (const at of ats) outcomes[at] = undefined
        const from = rows.length
        rows.push(...ats.map(at => rows[at] as Entry))
        records = new RecordsAhead(others, rows)
        await bringFrom(from)
      }
    })
    if (fallbacks.length > 0) for (const outcome of outcomes) if (notFound(outcome)) told(outcome as GetOutcome)
    // Before the directories get their recorded modes: one without read permission (0311) cannot
    // be opened to be fsynced after.
    await syncRenamed()
    // Then what is not a file's bytes: other names of hard links, symlinks, and directories last.
    // Where each hard link's first name went: asked of those firsts alone, not of every file.
    const firsts = new Set(linked.map(({ first }) => `${first.folder}/${first.path}`))
    const written = new Map<string, string>()
    if (firsts.size > 0) for (const o of outcomes) if ((o?.outcome === 'written' || o?.outcome === 'already-there') && firsts.has(o.path)) written.set(o.path, o.target as string)
    const entryJobs: EntryJob[] = [
      ...linked.map(({ row, first }) => ({ row, first, existing: written.get(`${first.folder}/${first.path}`) })),
      ...entries.map(row => ({ row }))
    ]
    const placed = await placeEntries(entryJobs, {
      place: (row) => { const { root, components } = targetRoot(config, init.to, row); return { root, components, dirMode: dirMode(row.folder) } },
      folderThere,
      attrs: (row) => restoredAttrs(row.meta, note),
      overwrite: init.overwrite === true,
      signal: init.signal
    })
    for (const outcome of placed) {
      outcomes.push(outcome)
      const said = { path: outcome.path, outcome: outcome.outcome, ...(outcome.reason === undefined ? {} : { reason: outcome.reason, code: outcome.code }) }
      init.onProgress?.(outcome.kind === undefined ? { type: 'get:file', detail: said } : { type: 'get:entry', detail: { kind: outcome.kind, ...said } })
    }
  } finally {
    // A run that failed renames nothing more than the batch already being synced.
    await fetcher.drain()
    try {
      // What a failed run renamed (a run that ended well synced it all already).
      await syncRenamed()
    } finally {
      await fetcher.close()
    }
  }
  return outcomes.filter((o): o is GetOutcome => o !== undefined)
}

