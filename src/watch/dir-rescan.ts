import { opendir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { EntryStore } from '../index/index.js'
import type { ChangeWriter } from './change-writer.js'
import { holdsTooLongPath, type FolderWatcher } from './folder-watcher.js'
import type { IgnoreMatcher } from './ignore.js'
import type { PathStage } from './path-stage.js'
import { NAME_NOT_UTF8, SYMLINK_NOT_FOLLOWED, type SkippedFiles } from './skipped-files.js'
import { walkFiles } from './walk.js'

export interface DirRescanInit {
  readonly root: string
  readonly folder: string
  readonly followSymlinks: boolean
  readonly ignore: IgnoreMatcher
  /** The folder's stop: walks end, and nothing is settled or listed after it. */
  readonly signal: AbortSignal
  readonly deviceId: string
  readonly entries: EntryStore
  readonly writer: ChangeWriter
  readonly watcher: FolderWatcher
  readonly stage: PathStage
  readonly skipped: SkippedFiles
  readonly logger: Logger
}

/**
 * What is looked at again, feeding the folder's {@link PathStage}: a directory whose watch event
 * could not name a file, one removed (the rows under it looked at), and a path skipped as
 * unreadable that is due for another try (a directory readable again is watched and walked).
 */
export class DirRescan {
  constructor (private readonly init: DirRescanInit) {}

  /** A watch event named the directory, not a file: its files are settled again. */
  changed (relDir: string): void {
    this.rescan(relDir, false).catch((err: unknown) => { this.failed(relDir, err) })
  }

  /** The directory went away: every row under it is looked at (each tombstoned once found gone). */
  removed (relDir: string): void {
    const { entries, deviceId, folder, skipped, stage, writer } = this.init
    skipped.clearTree(relDir)
    try {
      for (const entry of entries.list({ deviceId, prefix: `${folder}/${relDir}/`, dirs: true })) stage.settle(entry.path, 0)
    } catch (err) {
      // From chokidar's event: never throw there. The drift check finds these rows later.
      writer.readFailed(err as Error)
    }
  }

  /** A skipped path is due (or was touched): a file is looked at again, a directory walked again; one now ignored leaves the list. */
  due (rel: string, kind: 'file' | 'dir'): void {
    const { ignore, skipped, stage } = this.init
    if (ignore(rel)) skipped.clear(rel)
    else if (kind === 'file') stage.settle(rel, 0)
    else this.retry(rel)
  }

  /** A skipped directory is due: readable again, it is watched and walked; still not, it stays listed, backing off. */
  private retry (relDir: string): void {
    const { root, skipped, logger, folder, watcher, signal } = this.init
    const path = join(root, relDir)
    void opendir(path).then(async dir => {
      await dir.close()
      if (signal.aborted) return
      // Readable, but still holding a path too long to watch: stays skipped, backing off.
      if (holdsTooLongPath(path)) {
        skipped.skip(relDir, 'ENAMETOOLONG', 'dir')
        return
      }
      if (!skipped.clear(relDir)) return
      logger.info({ folder, path: relDir }, 'directory readable again: indexing it')
      watcher.rewatch(relDir)
      await this.rescan(relDir, true).catch((err: unknown) => { this.failed(relDir, err) })
    }, (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') skipped.clearTree(relDir)
      else skipped.skip(relDir, err.code ?? 'EIO', 'dir')
    }).catch((err: unknown) => { logger.warn({ folder, path: relDir, err }, 'retrying a skipped directory failed') })
  }

  private async rescan (relDir: string, recursive: boolean): Promise<void> {
    const { root, ignore, followSymlinks, signal, skipped, stage } = this.init
    if (ignore(relDir)) return
    // Names that are not UTF-8 in this directory are listed again: one renamed since leaves the list.
    // So are links not followed: one removed since leaves it too.
    const before = [...skipped.listedUnder(NAME_NOT_UTF8, relDir, recursive), ...skipped.listedUnder(SYMLINK_NOT_FOLLOWED, relDir, recursive)]
    const found = new Set<string>()
    const onBadName = (rel: string): void => { found.add(rel); skipped.skip(rel, NAME_NOT_UTF8) }
    const onSymlink = (rel: string): void => { found.add(rel); stage.settle(rel, 0) }
    const onUnreadable = (rel: string, code: string, kind: 'file' | 'dir'): void => { skipped.skip(rel, code, kind) }
    for await (const file of walkFiles(root, relDir, { ignore, followSymlinks, recursive, signal, onBadName, onSymlink, onUnreadable })) stage.settle(file.relativePath, 0)
    // A walk cut short by the stop saw only part of the directory: nothing leaves the list on its word.
    if (signal.aborted) return
    for (const path of before) if (!found.has(path)) skipped.clear(path)
  }

  /** A walk of a directory that failed part way (out of descriptors, say): the directory is listed and walked again later. */
  private failed (relDir: string, err: unknown): void {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR' || this.init.signal.aborted) return
    this.init.logger.warn({ folder: this.init.folder, path: relDir, err }, 'a directory could not be looked at again; retrying')
    this.init.skipped.skip(relDir, code ?? 'EIO', 'dir')
  }
}
