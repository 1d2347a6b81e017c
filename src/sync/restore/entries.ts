import { lstat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { FileAttrs } from '../../custody/index.js'
import { TargetExistsError } from '../../errors.js'
import type { Entry } from '../../index/index.js'
import { eachAtOnce } from '../../util/each-at-once.js'
import { fsyncPath } from '../../util/fsync.js'
import { prepareTarget } from './safe-target.js'
import { depthOf, finishDirectory, inodeIn, placeHardLink, placeSymlink, sameSymlink, symlinkInPlace } from './tree.js'
import type { GetOutcome } from './get-outcome.js'

/** An entry put in place after the files' bytes: a symlink, a directory, or another name of a hard link (`first`, put at `existing`). */
export interface EntryJob { readonly row: Entry, readonly first?: Entry, readonly existing?: string }

export interface PlaceEntriesInit {
  /** Where a row goes, and the mode a directory made on the way gets. */
  readonly place: (row: Entry) => { root: string, components: string[], dirMode: (parts: readonly string[]) => number }
  readonly attrs: (row: Entry) => FileAttrs
  readonly overwrite: boolean
  readonly signal?: AbortSignal
  /** Refuses, saying what to do, a row whose folder is not where the config says (the files' check). */
  readonly folderThere?: (folder: string, root: string) => Promise<void>
}

/** Links made at once. */
const CONCURRENCY = 8

const shownOf = (row: Entry): string => `${row.folder}/${row.path}`

/**
 * Puts back what is not a file's bytes: hard links and symlinks first, then each directory's mode,
 * owner and mtime, deepest first, so nothing written under a directory moves its mtime after.
 * Every outcome is answered; one entry's failure does not stop the rest. The directories renamed
 * into are fsynced once each before it answers.
 */
export async function placeEntries (jobs: readonly EntryJob[], init: PlaceEntriesInit): Promise<GetOutcome[]> {
  const outcomes: GetOutcome[] = []
  const renamedInto = new Set<string>()
  const failed = (row: Entry, err: unknown, kind?: 'symlink' | 'dir'): void => {
    if (init.signal?.aborted === true) throw err
    const error = err as Error & { code?: unknown }
    if (err instanceof TargetExistsError) outcomes.push({ path: shownOf(row), kind, outcome: 'kept-different', code: err.code, reason: err.message })
    else outcomes.push({ path: shownOf(row), kind, outcome: 'failed', reason: error.message, code: typeof error.code === 'string' ? error.code : 'ERR_CIDSYNC' })
  }
  const links = jobs.filter(j => j.row.meta?.kind !== 'dir')
  await eachAtOnce(links, CONCURRENCY, async ({ row, first: firstRow, existing }) => {
    const kind = row.meta?.kind === 'symlink' ? 'symlink' : undefined
    try {
      init.signal?.throwIfAborted()
      const { root, components, dirMode } = init.place(row)
      await init.folderThere?.(row.folder, root)
      const { target, targetDir } = await prepareTarget(root, components, dirMode)
      const there = await lstat(target).catch(() => undefined)
      if (kind === 'symlink') {
        const linkTarget = row.meta?.target ?? ''
        const attrs = init.attrs(row)
        const same = there?.isSymbolicLink() === true && await sameSymlink(target, linkTarget)
        // The same target with its mtime (and, as root, its owner): right as it is. Else made anew.
        if (same && there !== undefined && symlinkInPlace(there, row.mtimeMs, attrs)) {
          outcomes.push({ path: shownOf(row), kind, outcome: 'already-there', target })
          return
        }
        if (there !== undefined && !init.overwrite && !there.isSymbolicLink()) {
          outcomes.push({ path: shownOf(row), kind, outcome: 'kept-different', target, code: 'ERR_TARGET_EXISTS', reason: `${target} is not a symlink: add --overwrite to replace it` })
          return
        }
        // A link there that says another target is another version of this one: replaced.
        await placeSymlink(linkTarget, target, targetDir, there !== undefined, attrs, row.mtimeMs)
      } else {
        if (existing === undefined || firstRow === undefined) { outcomes.push({ path: shownOf(row), outcome: 'failed', code: 'ERR_CIDSYNC', reason: 'it is a hard link of a file that was not brought back (its outcome says why)' }); return }
        const at = init.place(firstRow)
        const first = await inodeIn(existing, (await prepareTarget(at.root, at.components, at.dirMode)).targetDir)
        if (there !== undefined && there.ino === first.ino && there.dev === first.dev) { outcomes.push({ path: shownOf(row), outcome: 'already-there', target }); return }
        if (there !== undefined && !init.overwrite) {
          outcomes.push({ path: shownOf(row), outcome: 'kept-different', target, code: 'ERR_TARGET_EXISTS', reason: `${target} holds another file: add --overwrite to make it a link of ${existing}` })
          return
        }
        await placeHardLink(existing, first, target, targetDir, there !== undefined)
      }
      renamedInto.add(dirname(target))
      outcomes.push({ path: shownOf(row), kind, outcome: 'written', target })
    } catch (err) {
      failed(row, err, kind)
    }
  })
  await eachAtOnce([...renamedInto], CONCURRENCY, async (dir) => { await fsyncPath(dir) })
  // A level at a time, deepest first: a directory made on the way changes only its parent, a
  // level up, so the directories of one level are finished at once.
  const byDepth = new Map<number, Entry[]>()
  for (const { row } of jobs) {
    if (row.meta?.kind !== 'dir') continue
    const depth = depthOf(row.path)
    const level = byDepth.get(depth)
    if (level === undefined) byDepth.set(depth, [row])
    else level.push(row)
  }
  for (const depth of [...byDepth.keys()].sort((a, b) => b - a)) {
    const level = byDepth.get(depth) ?? []
    const done: Array<GetOutcome | undefined> = new Array(level.length)
    await eachAtOnce(level, CONCURRENCY, async (row, i) => {
      try {
        init.signal?.throwIfAborted()
        const { root, components, dirMode } = init.place(row)
        await init.folderThere?.(row.folder, root)
        // Made (or found) as a directory, each component checked; then given what it records.
        const { targetDir } = await prepareTarget(root, [...components, '.'], dirMode)
        const path = join(root, ...components)
        const changed = await finishDirectory(path, targetDir, init.attrs(row), row.mtimeMs)
        done[i] = { path: shownOf(row), kind: 'dir', outcome: changed ? 'written' : 'already-there', target: path }
      } catch (err) {
        failed(row, err, 'dir')
      }
    })
    for (const outcome of done) if (outcome !== undefined) outcomes.push(outcome)
  }
  return outcomes
}
