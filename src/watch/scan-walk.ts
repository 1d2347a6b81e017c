import { opendirSync, readdirSync, readlinkSync, statSync, lstatSync, existsSync, type Dirent, type Stats } from 'node:fs'
import { join } from 'node:path'
import { openIndex, utf8Before, LEAN_CACHE_KIB, type Index, type KnownRow } from '../index/index.js'
import { statTuple } from '../content/index.js'
import { IndexMissingError } from '../errors.js'
import { createIgnoreMatcher } from './ignore.js'
import { dirId } from './dir-chain.js'
import { printableName, utf8Name } from './file-name.js'
import type { Described, ScanMessage, ScanRequest } from './scan-messages.js'
import { specialFileKind } from './special-files.js'

// Files a message: smaller batches keep fewer paths alive between the scan, the hash pool and the
// writer. The main thread's young-generation collections copy what is alive (docs/benchmarks.md,
// "Start-up, the first index and the index's restore").
const BATCH = 500
/**
 * Rows read from the index at a time: the scan holds a page of them, never the whole folder. Small,
 * so a page dies young. A large page outlives the thread's young generation while its files are
 * stat'ed, is promoted, and grows the old space until V8 collects it (docs/benchmarks.md, "Memory
 * beside syncthing"). A page is one indexed lookup, so many small pages cost the scan no time.
 */
const ROWS_PAGE = 200
/** Directories deep through followed links, so a tree that keeps growing under the scan still ends. */
const MAX_DEPTH = 256

type Row = KnownRow

/** Whether the directory at `path` lists at most `most` entries: true too where it cannot be opened (its listing says why). */
function holdsAtMost (path: string, most: number): boolean {
  let dir
  try {
    dir = opendirSync(path)
  } catch {
    return true
  }
  try {
    for (let seen = 0; dir.readSync() !== null;) if (++seen > most) return false
    return true
  } catch {
    return true
  } finally {
    dir.closeSync()
  }
}

/** Whether a row records what the stat says of its entry (a chmod or chown moves no mtime). */
function sameAsRow (row: Row, stats: Stats, kind: string): boolean {
  const linkGroup = kind === 'file' && stats.nlink > 1 ? `${stats.dev}:${stats.ino}` : null
  return row[4] === kind && row[5] === (stats.mode & 0o7777) && row[6] === stats.uid && row[7] === stats.gid && row[9] === linkGroup
}

/**
 * This device's rows of the folder in path order, a page at a time, through a read-only connection
 * of the scan's own. The walk goes in the same order and meets them so. What the scan keeps in
 * memory is a page of rows and the directories it is in, however large the folder.
 * Rows the walk passes without finding their file are `missing`.
 */
class Rows {
  readonly missing: string[] = []
  private page: Row[] = []
  private at = 0
  private done: boolean

  constructor (private readonly index: Index | undefined, private readonly request: ScanRequest) {
    this.done = index === undefined
    this.read('')
  }

  /** The row of `path`, if it has one; rows sorting before it are missing. Called in path order. */
  take (path: string): Row | undefined {
    for (;;) {
      const row = this.peek()
      if (row === undefined) return undefined
      if (row[0] === path) {
        this.at++
        return row
      }
      if (!utf8Before(row[0], path)) return undefined
      this.missing.push(row[0])
      this.at++
    }
  }

  /** Every row left is missing. */
  finish (): void {
    while (this.peek() !== undefined) this.missing.push((this.page[this.at++] as Row)[0])
  }

  private peek (): Row | undefined {
    if (this.at < this.page.length) return this.page[this.at]
    if (this.done) return undefined
    this.read((this.page[this.page.length - 1] as Row)[0])
    return this.page[this.at]
  }

  private read (after: string): void {
    if (this.index === undefined) return
    this.page = this.index.entries.knownFilesAfter(this.request.deviceId, this.request.folder, after, ROWS_PAGE)
    this.at = 0
    if (this.page.length < ROWS_PAGE) this.done = true
  }
}

/** The index to compare against, read-only; undefined when there is none yet (every file is new). */
function openKnown (request: ScanRequest): Index | undefined {
  if (!existsSync(request.indexPath)) return undefined
  try {
    return openIndex(request.indexPath, { readonly: true, cacheKiB: LEAN_CACHE_KIB })
  } catch (err) {
    if (err instanceof IndexMissingError) return undefined
    throw err
  }
}

/**
 * A name that is not UTF-8 reads back with U+FFFD in it, a path that does not exist. The directory
 * is read again as bytes: each such name is reported (in a lossless printable form) and left out.
 */
function withoutBadNames (root: string, dirRel: string, entries: Dirent[], post: (message: ScanMessage) => void): Dirent[] {
  const valid = new Set<string>()
  try {
    for (const raw of readdirSync(join(root, dirRel), { encoding: 'buffer' })) {
      const name = utf8Name(raw)
      if (name !== undefined) valid.add(name)
      else post({ type: 'unreadable', path: dirRel === '' ? printableName(raw) : `${dirRel}/${printableName(raw)}`, code: 'ERR_NAME_NOT_UTF8' })
    }
  } catch {
    return entries
  }
  return entries.filter(e => !e.name.includes('\uFFFD') || valid.has(e.name))
}

/**
 * A directory being walked: its entries' keys sorted, and how far the walk is in them. A key is
 * the entry's name, a directory's with a slash after it (it sorts as its files' paths do). Only
 * keys are kept, not an object and a path an entry: a directory of 1,000 files is held while its
 * files are stat'ed, long enough to be promoted out of the young generation. Entries whose type the
 * listing did not tell (followed links, file systems without it) keep the stats that told it.
 */
interface Level { readonly dirRel: string, readonly keys: string[], readonly stated: ReadonlyMap<string, Stats> | undefined, at: number, readonly chain: string[] }

/** A listed directory: its keys in the walk's order (see {@link Level}). */
interface Listing { readonly keys: string[], readonly stated: Map<string, Stats> | undefined }

const NO_STATS: ReadonlyMap<string, Stats> = new Map()

/**
 * The startup scan: a walk with blocking readdir and stat (the fast way on a thread of its own,
 * scan-worker.ts; a command's small folder is walked on its own thread), compared against this
 * device's rows. It sends only what needs hashing, and
 * at the end the rows whose files it did not find. It walks in path order, each directory's
 * entries sorted, so it meets the rows as the index stores them (see {@link Rows}).
 */
export function scan (request: ScanRequest, post: (message: ScanMessage) => void): void {
  const index = openKnown(request)
  try {
    walk(request, new Rows(index, request), post)
  } finally {
    index?.close()
  }
}

function walk (request: ScanRequest, rows: Rows, post: (message: ScanMessage) => void): void {
  if (request.gate !== undefined) {
    // Opened by the main thread once the watches are up; a stop terminates this thread even here.
    const gate = new Int32Array(request.gate)
    while (Atomics.load(gate, 0) === 0) Atomics.wait(gate, 0, 0, 1_000)
  }
  const credit = new Int32Array(request.credit)
  const ignore = createIgnoreMatcher(request.ignore, request.exclude)
  const follow = request.followSymlinks
  let changed: Array<readonly [string, number]> = []
  let described: Described[] = []
  let scanned = 0
  const flush = (): void => {
    if (changed.length === 0 && described.length === 0) return
    // Held here until the main thread has room for more: a stop terminates this thread even here.
    while (Atomics.load(credit, 0) <= 0) Atomics.wait(credit, 0, Atomics.load(credit, 0), 1_000)
    Atomics.sub(credit, 0, 1)
    post({ type: 'changed', files: changed, described, scanned })
    changed = []
    described = []
  }
  const queue = (rel: string, size: number): void => {
    changed.push([rel, size])
    if (changed.length + described.length >= BATCH) flush()
  }
  const describe = (entry: Described): void => {
    described.push(entry)
    if (changed.length + described.length >= BATCH) flush()
  }
  /** A directory's row (its path with `/` after it) compared with its stat; a new or different one described. */
  const directory = (rel: string, known: Stats | undefined): void => {
    const row = rows.take(`${rel}/`)
    let stats = known
    try {
      stats ??= (follow ? statSync : lstatSync)(join(request.root, rel))
    } catch {
      if (row !== undefined) rows.missing.push(`${rel}/`)
      return
    }
    if (row !== undefined && row[2] === stats.mtimeMs && sameAsRow(row, stats, 'dir')) return
    describe([`${rel}/`, null, 0, stats.mtimeMs, statTuple(stats), 'dir', null])
  }

  const relOf = (dirRel: string, name: string): string => dirRel === '' ? name : `${dirRel}/${name}`

  // Entries listed so far, against the request's bound: past it the walk stops and says so.
  let listed = 0
  let overBound = false
  /** A directory's entries in path order, or undefined when it cannot be read (reported). */
  const list = (dirRel: string): Listing | undefined => {
    // Counted before it is read whole: a huge directory stops a bounded walk at once.
    if (request.maxEntries !== undefined && !holdsAtMost(join(request.root, dirRel), request.maxEntries - listed)) {
      overBound = true
      return { keys: [], stated: undefined }
    }
    let entries: Dirent[]
    try {
      entries = readdirSync(join(request.root, dirRel), { withFileTypes: true })
    } catch (err) {
      // Without its root the scan would find every file missing: fail instead of answering that.
      if (dirRel === '') throw err
      post({ type: 'unreadable', path: dirRel, code: (err as NodeJS.ErrnoException).code ?? 'EIO' })
      return undefined
    }
    listed += entries.length
    if (request.maxEntries !== undefined && listed > request.maxEntries) overBound = true
    if (entries.some(e => e.name.includes('\uFFFD'))) entries = withoutBadNames(request.root, dirRel, entries, post)
    const keys: string[] = []
    let stated: Map<string, Stats> | undefined
    for (const entry of entries) {
      const rel = relOf(dirRel, entry.name)
      if (ignore.itself(rel)) continue
      if (entry.isDirectory()) {
        keys.push(`${entry.name}/`)
        continue
      }
      const isLink = entry.isSymbolicLink()
      const special = specialFileKind(entry)
      if (special !== undefined) {
        post({ type: 'special', path: rel, what: special })
        continue
      }
      if (entry.isFile()) {
        keys.push(entry.name)
        continue
      }
      // Followed links, and entries a file system gave no type: what they are decides their place.
      let stats: Stats
      try {
        stats = isLink && follow ? statSync(join(request.root, rel)) : lstatSync(join(request.root, rel))
      } catch {
        continue
      }
      // A link not followed is an entry of its own: its key as a file's, its stats telling it apart.
      const key = stats.isDirectory() ? `${entry.name}/` : stats.isFile() || stats.isSymbolicLink() ? entry.name : undefined
      if (key === undefined) {
        const what = specialFileKind(stats)
        if (what !== undefined) post({ type: 'special', path: rel, what })
        continue
      }
      keys.push(key)
      ;(stated ??= new Map()).set(key, stats)
    }
    return { keys: keys.sort((a, b) => a === b ? 0 : utf8Before(a, b) ? -1 : 1), stated }
  }

  const level = (dirRel: string, listing: Listing, chain: string[]): Level => ({ dirRel, keys: listing.keys, stated: listing.stated, at: 0, chain })

  /** Enters a directory unless it leads back up the tree (followed links) or too deep. */
  const enter = (levels: Level[], rel: string, known: Stats | undefined, chain: string[]): void => {
    if (!follow) {
      const listing = list(rel)
      if (listing !== undefined) levels.push(level(rel, listing, chain))
      return
    }
    let id
    try {
      id = dirId(known ?? lstatSync(join(request.root, rel)))
    } catch (err) {
      // Out of descriptors, no permission: listed and walked again later, never silently left out.
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO'
      if (code !== 'ENOENT' && code !== 'ENOTDIR') post({ type: 'unreadable', path: rel, code })
      return
    }
    if (chain.includes(id) || chain.length >= MAX_DEPTH) return
    const listing = list(rel)
    if (listing !== undefined) levels.push(level(rel, listing, [...chain, id]))
  }

  // Followed links can lead back up the tree: each directory carries the (device, inode) of those
  // above it, and a link to one of them is not entered.
  const levels: Level[] = [level('', list('') as Listing, follow ? [dirId(statSync(request.root))] : [])]
  while (levels.length > 0 && !overBound) {
    const at = levels[levels.length - 1] as Level
    const key = at.keys[at.at++]
    if (key === undefined) {
      levels.pop()
      continue
    }
    const known = (at.stated ?? NO_STATS).get(key)
    if (key.endsWith('/')) {
      const rel = relOf(at.dirRel, key.slice(0, -1))
      directory(rel, known)
      enter(levels, rel, known, at.chain)
      continue
    }
    const rel = relOf(at.dirRel, key)
    const row = rows.take(rel)
    // A plain file by its listing (no stats kept): without a row to compare with, hashing stats it anyway.
    if (known === undefined && row === undefined) {
      scanned++
      queue(rel, 0)
      continue
    }
    let stats = known
    if (stats === undefined) {
      try {
        stats = lstatSync(join(request.root, rel))
      } catch {
        if (row !== undefined) rows.missing.push(rel)
        continue
      }
    }
    if (stats.isSymbolicLink() && !follow) {
      scanned++
      if (row !== undefined && row[1] === stats.size && row[2] === stats.mtimeMs && sameAsRow(row, stats, 'symlink')) continue
      let target: string
      try {
        target = readlinkSync(join(request.root, rel))
      } catch {
        if (row !== undefined) rows.missing.push(rel)
        continue
      }
      describe([rel, null, stats.size, stats.mtimeMs, statTuple(stats), 'symlink', target])
      continue
    }
    if (!stats.isFile()) {
      // Replaced by a directory since it was listed: its watch reports it; its row is looked at.
      if (row !== undefined) rows.missing.push(rel)
      continue
    }
    scanned++
    if (row !== undefined && row[1] === stats.size && row[2] === stats.mtimeMs && row[3] === request.profile) {
      // The same bytes: only what the file is may have moved (a chmod), and then its row is rewritten
      // with the CID it has (looked up by the main thread), not its bytes hashed.
      if (!sameAsRow(row, stats, 'file')) describe([rel, null, stats.size, stats.mtimeMs, statTuple(stats), 'file', null])
      continue
    }
    queue(rel, stats.size)
  }
  if (overBound) {
    post({ type: 'over-bound' })
    return
  }
  flush()
  rows.finish()
  post({ type: 'done', scanned, missing: rows.missing })
}

