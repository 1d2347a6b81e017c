import type { Logger } from 'pino'
import type { FolderWatcher } from './folder-watcher.js'
import type { IgnoreMatcher } from './ignore.js'
import { walkFiles } from './walk.js'

/** New directories walked at once (each holds a directory handle open). */
const CONCURRENT_WALKS = 8

export interface NewDirsInit {
  readonly root: string
  readonly folder: string
  readonly ignore: IgnoreMatcher
  readonly followSymlinks: boolean
  readonly watcher: FolderWatcher
  readonly logger: Logger
  readonly signal: AbortSignal
  /** A file found: settle, then look. */
  readonly onFile: (relativePath: string) => void
  /** A name that is not UTF-8, printed losslessly. */
  readonly onBadName: (printablePath: string) => void
  /**
   * A directory or file that could not be read (out of descriptors, `EMFILE`; no permission...),
   * or a directory whose walk failed: to be listed as skipped and retried, never dropped.
   */
  readonly onUnreadable: (relativePath: string, code: string, kind: 'file' | 'dir') => void
  /** A symbolic link not followed. */
  readonly onSymlink?: (relativePath: string) => void
  /** No walk runs any more. */
  readonly onIdle: () => void
}

/**
 * Directories made (or moved in) while watching. Each is walked once its own watch is up, so a
 * file written into it before then is found by the walk and one written after by the watch;
 * its subdirectories are walked the same way, each after its own watch. A directory named again
 * while its walk runs is walked once more after it.
 */
export class NewDirs {
  /** Directory → whether to walk it once more when done. */
  private readonly walking = new Map<string, boolean>()
  private slots = CONCURRENT_WALKS
  private readonly waiting: Array<() => void> = []

  constructor (private readonly init: NewDirsInit) {}

  get busy (): boolean {
    return this.walking.size > 0
  }

  add (relDir: string): void {
    if (this.init.signal.aborted || this.init.ignore(relDir)) return
    if (this.walking.has(relDir)) {
      this.walking.set(relDir, true)
      return
    }
    this.walking.set(relDir, false)
    this.walk(relDir)
      .catch((err: unknown) => {
        if (this.init.signal.aborted) return
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'ENOENT' || code === 'ENOTDIR') return
        // Retried from the skipped list: a walk cut short by EMFILE must not leave its files out.
        this.init.logger.warn({ folder: this.init.folder, path: relDir, err }, 'a new directory could not be walked; retrying')
        this.init.onUnreadable(relDir, code ?? 'EIO', 'dir')
      })
      .finally(() => {
        const again = this.walking.get(relDir) === true
        this.walking.delete(relDir)
        if (again) this.add(relDir)
        else if (this.walking.size === 0) this.init.onIdle()
      })
  }

  private async walk (relDir: string): Promise<void> {
    await this.init.watcher.watched(relDir)
    if (this.slots === 0) await new Promise<void>(resolve => this.waiting.push(resolve))
    else this.slots--
    try {
      const { root, ignore, followSymlinks, signal, onBadName, onUnreadable, onSymlink } = this.init
      const options = { ignore, followSymlinks, recursive: false, signal, onDir: (rel: string) => this.add(rel), onBadName, onUnreadable, onSymlink }
      for await (const file of walkFiles(root, relDir, options)) this.init.onFile(file.relativePath)
    } finally {
      const next = this.waiting.shift()
      if (next !== undefined) next()
      else this.slots++
    }
  }
}
