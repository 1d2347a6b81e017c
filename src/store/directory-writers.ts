import { statSync } from 'node:fs'
import { dirname, join } from 'node:path'

/**
 * The folders of a directory store that users other than its owner may write: each lets them swap
 * the store's files or folders. Its parent counts too, unless sticky (then none may rename it).
 */
export function openToOthers (dir: string): string[] {
  const places: Array<[string, boolean]> = [[dirname(dir), true], [dir, false], [join(dir, 'objects'), false], [join(dir, 'tmp'), false]]
  return places.filter(([path, stickyGuards]) => {
    const mode = statSync(path, { throwIfNoEntry: false })?.mode
    return mode !== undefined && (mode & 0o002) !== 0 && !(stickyGuards && (mode & 0o1000) !== 0)
  }).map(([path]) => path)
}
