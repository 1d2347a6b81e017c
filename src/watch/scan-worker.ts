import { readdirSync, statSync, lstatSync, existsSync, type Dirent, type Stats } from 'node:fs'
import { join } from 'node:path'
import { parentPort, workerData } from 'node:worker_threads'
import { openIndex, type KnownFile } from '../index/index.js'
import { IndexMissingError } from '../errors.js'
import { createIgnoreMatcher } from './ignore.js'
import { dirId } from './dir-chain.js'
import { printableName, utf8Name } from './file-name.js'
import type { ScanMessage, ScanRequest } from './scan-messages.js'
import { SYMLINK_NOT_FOLLOWED } from './skipped-files.js'

const BATCH = 2_000
/** Directories deep through followed links, so a tree that keeps growing under the scan still ends. */
const MAX_DEPTH = 256

/** This device's rows of the folder, through a read-only connection of the scan's own. */
function loadKnown (request: ScanRequest): Map<string, KnownFile> {
  if (!existsSync(request.indexPath)) return new Map()
  let index
  try {
    index = openIndex(request.indexPath, { readonly: true })
  } catch (err) {
    if (err instanceof IndexMissingError) return new Map()
    throw err
  }
  try {
    return index.entries.knownFiles(request.deviceId, request.folder)
  } finally {
    index.close()
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
 * The startup scan, off the main thread: a walk with blocking readdir and stat (the fast way on
 * a thread of its own), compared against this device's rows. It sends only what needs hashing, and
 * at the end the rows whose files it did not find.
 */
function scan (request: ScanRequest, post: (message: ScanMessage) => void): void {
  const known = loadKnown(request)
  if (request.gate !== undefined) {
    // Opened by the main thread once the watches are up; a stop terminates this thread even here.
    const gate = new Int32Array(request.gate)
    while (Atomics.load(gate, 0) === 0) Atomics.wait(gate, 0, 0, 1_000)
  }
  const ignore = createIgnoreMatcher(request.ignore, request.exclude)
  // Followed links can lead back up the tree: each directory carries the (device, inode) of those
  // above it, and a link to one of them is not entered.
  const follow = request.followSymlinks
  const pending: Array<{ rel: string, chain: string[] }> = [{ rel: '', chain: follow ? [dirId(statSync(request.root))] : [] }]
  let changed: Array<readonly [string, number]> = []
  let scanned = 0
  const flush = (): void => {
    if (changed.length > 0) post({ type: 'changed', files: changed, scanned })
    changed = []
  }
  const enter = (rel: string, chain: string[], statOf: () => Stats): void => {
    let id
    try {
      id = dirId(statOf())
    } catch (err) {
      // Out of descriptors, no permission: listed and walked again later, never silently left out.
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO'
      if (code !== 'ENOENT' && code !== 'ENOTDIR') post({ type: 'unreadable', path: rel, code })
      return
    }
    if (!chain.includes(id) && chain.length < MAX_DEPTH) pending.push({ rel, chain: [...chain, id] })
  }
  while (pending.length > 0) {
    const { rel: dirRel, chain } = pending.pop() as { rel: string, chain: string[] }
    let entries: Dirent[]
    try {
      entries = readdirSync(join(request.root, dirRel), { withFileTypes: true })
    } catch (err) {
      // Without its root the scan would find every file missing: fail instead of answering that.
      if (dirRel === '') throw err
      post({ type: 'unreadable', path: dirRel, code: (err as NodeJS.ErrnoException).code ?? 'EIO' })
      continue
    }
    if (entries.some(e => e.name.includes('\uFFFD'))) entries = withoutBadNames(request.root, dirRel, entries, post)
    for (const entry of entries) {
      const rel = dirRel === '' ? entry.name : `${dirRel}/${entry.name}`
      if (ignore.itself(rel)) continue
      if (entry.isDirectory()) {
        if (!follow) pending.push({ rel, chain })
        else enter(rel, chain, () => lstatSync(join(request.root, rel)))
        continue
      }
      const isLink = entry.isSymbolicLink()
      if (isLink && !follow) {
        post({ type: 'unreadable', path: rel, code: SYMLINK_NOT_FOLLOWED })
        continue
      }
      if (entry.isFIFO() || entry.isSocket() || entry.isBlockDevice() || entry.isCharacterDevice()) continue
      if (entry.isFile() && !known.has(rel)) {
        // No row to compare with: hashing stats it anyway, so skip a stat here (the cold start's cost).
        scanned++
        changed.push([rel, 0])
        if (changed.length >= BATCH) flush()
        continue
      }
      // Files, followed links, and entries a file system gave no type: stat for size, mtime and kind.
      let stats: Stats
      try {
        stats = isLink ? statSync(join(request.root, rel)) : lstatSync(join(request.root, rel))
      } catch {
        continue
      }
      if (stats.isDirectory()) {
        enter(rel, chain, () => stats)
        continue
      }
      if (!stats.isFile()) continue
      scanned++
      const row = known.get(rel)
      known.delete(rel)
      if (row !== undefined && row.size === stats.size && row.mtimeMs === stats.mtimeMs && row.cidProfile === request.profile) continue
      changed.push([rel, stats.size])
      if (changed.length >= BATCH) flush()
    }
  }
  flush()
  post({ type: 'done', scanned, missing: [...known.keys()] })
}

const port = parentPort
if (port !== null) {
  try {
    scan(workerData as ScanRequest, message => port.postMessage(message))
  } catch (err) {
    port.postMessage({ type: 'failed', message: (err as Error).message } satisfies ScanMessage)
  }
}
