import { realpathSync } from 'node:fs'
import { isAbsolute, relative, sep } from 'node:path'
import type { Config, ExcludedDir, FolderConfig } from './config.js'

/** `dir`'s path inside `folder` (`/`-separated), or undefined when it is not strictly inside. */
function lexicallyInside (folder: string, dir: string): string | undefined {
  const rel = relative(folder, dir)
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined
  return sep === '/' ? rel : rel.split(sep).join('/')
}

function real (path: string): string | undefined {
  try {
    return realpathSync.native(path)
  } catch {
    return undefined
  }
}

/** Inside as written, or once links are resolved (both must exist for that). */
function inside (folder: string, dir: string): string | undefined {
  const direct = lexicallyInside(folder, dir)
  if (direct !== undefined) return direct
  const [realFolder, realDir] = [real(folder), real(dir)]
  return realFolder === undefined || realDir === undefined ? undefined : lexicallyInside(realFolder, realDir)
}

/**
 * cidsync's own dirs (the state dir, the embedded service's dir) that lie inside each folder, set
 * as the folder's `exclude`: the daemon writes them all the time, and indexing them would never let
 * the folder settle. A dir inside another one already excluded is not listed again; a config file
 * kept in the state dir is covered by it.
 */
export function excludeOwnDirs (folders: readonly FolderConfig[], config: Pick<Config, 'stateDir' | 'service'>): FolderConfig[] {
  const own = [{ dir: config.stateDir, what: 'the state dir' }]
  if (config.service.mode === 'embedded') own.push({ dir: config.service.dir, what: 'the embedded service\'s dir (service.dir)' })
  return folders.map(({ exclude: _old, ...folder }) => {
    const exclude: ExcludedDir[] = []
    for (const { dir, what } of own) {
      const path = inside(folder.path, dir)
      if (path === undefined || exclude.some(e => path === e.path || path.startsWith(`${e.path}/`))) continue
      exclude.push({ path, dir, what })
    }
    return exclude.length > 0 ? { ...folder, exclude } : folder
  })
}

/** What a folder leaves out of cidsync's own, one sentence each (for status and the log). */
export function excludedNotes (folder: FolderConfig): string[] {
  return (folder.exclude ?? []).map(e => `${e.what} ${e.dir} lies inside this folder (at ${e.path}/): it is not indexed`)
}
