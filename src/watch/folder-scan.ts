import type { CidProfileName } from '../content/index.js'
import type { FolderConfig } from '../config/index.js'
import type { EntryStore } from '../index/index.js'
import type { ChangeWriter } from './change-writer.js'
import type { HashPool } from './hash-pool.js'
import type { IgnoreMatcher } from './ignore.js'
import type { PathStage } from './path-stage.js'
import { scanFolder, type ScanResult } from './scan.js'
import { SYMLINK_NOT_FOLLOWED, type SkippedFiles } from './skipped-files.js'
import { SPECIAL_FILE } from './special-files.js'

/** cidsync's own dirs inside the folder, never indexed. */
export function excludedPaths (folder: FolderConfig): string[] {
  return (folder.exclude ?? []).map(e => e.path)
}

export interface FolderScanComponents {
  readonly entries: EntryStore
  readonly writer: ChangeWriter
  readonly deviceId: string
  readonly stage: PathStage
  readonly skipped: SkippedFiles
  /** Its room is awaited before each batch goes to the stage: a cold index does not queue a million paths. */
  readonly pool: HashPool
}

export interface FolderScanInit {
  readonly folder: FolderConfig
  readonly profile: CidProfileName
  readonly ignore: IgnoreMatcher
  /** The folder's stop: the scan thread is ended at once, and the scan rejects. */
  readonly signal: AbortSignal
  /** See ScanOptions.inlineEntries. */
  readonly inlineEntries?: number
}

/**
 * A folder's pass over its files on the scan thread, compared with its rows: every file whose
 * size or mtime moved goes to the {@link PathStage} to be hashed, every row whose file was not
 * found is looked at (or tombstoned, when a rule now ignores it). At start, and as the drift check.
 */
export class FolderScan {
  /** Files seen by the last scan so far. */
  scanned = 0

  constructor (private readonly components: FolderScanComponents, private readonly init: FolderScanInit) {}

  /** The startup scan; with `after`, the thread loads the rows at once and walks once `after` settles. */
  async startup (after?: Promise<unknown>): Promise<void> {
    const result = await this.run({ after })
    this.scanned = result.scanned
    // Gone while the daemon was down, or ignored by a rule added since.
    for (const rel of result.missing) this.repair(rel)
  }

  /**
   * A fresh scan of a watched folder, each difference queued for repair as at start; answers how
   * many differences no event had already queued. `stillSo` is asked once the scan is done: false
   * (the folder stopped being watched, its root went away) leaves the rows alone and answers undefined.
   */
  async drift (stillSo: () => Promise<boolean>): Promise<number | undefined> {
    const { writer, skipped, stage } = this.components
    // Rows gathered but not committed would look like drift to the scan's own connection.
    writer.flush()
    let found = 0
    const links = new Set<string>()
    const listedLinks = skipped.listedUnder(SYMLINK_NOT_FOLLOWED, '', true)
    const result = await this.run({ seen: rel => { if (!stage.has(rel)) found++ }, linkSeen: rel => links.add(rel) })
    if (!(await stillSo())) return undefined
    for (const path of listedLinks) if (!links.has(path)) skipped.clear(path)
    for (const rel of result.missing) {
      if (stage.has(rel)) continue
      found++
      this.repair(rel)
    }
    return found
  }

  private repair (rel: string): void {
    if (this.init.ignore(rel)) this.components.stage.remove(rel)
    else this.components.stage.settle(rel, 0)
  }

  private async run (options: { seen?: (rel: string) => void, linkSeen?: (rel: string) => void, after?: Promise<unknown> }): Promise<ScanResult> {
    const { folder, profile, signal } = this.init
    const { entries, deviceId, stage, skipped } = this.components
    const request = {
      root: folder.path, folder: folder.name, ignore: folder.ignore, exclude: excludedPaths(folder), followSymlinks: folder.followSymlinks,
      indexPath: entries.path, deviceId, profile
    }
    return await scanFolder(request, {
      onChanged: (files, scanned) => {
        this.scanned = scanned
        for (const [rel, size] of files) {
          options.seen?.(rel)
          stage.hash(rel, size)
        }
      },
      onDescribed: (described) => {
        for (const entry of described) {
          // A directory's mtime moves with every file made or removed in it, which no event reports
          // for the directory: refreshed here, not counted as drift.
          if (entry[5] !== 'dir') options.seen?.(entry[0])
          stage.described(entry)
        }
      },
      onSpecial: (rel) => { skipped.skip(rel, SPECIAL_FILE) },
      onUnreadable: (rel, code) => {
        if (code === SYMLINK_NOT_FOLLOWED) options.linkSeen?.(rel)
        skipped.skip(rel, code, 'dir')
      }
    }, { signal, after: options.after, room: async () => { await this.components.pool.room() }, inlineEntries: this.init.inlineEntries })
  }
}
