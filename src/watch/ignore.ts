import picomatch from 'picomatch'

/** Tells whether a path relative to a watched folder (`/`-separated) is ignored. */
export interface IgnoreMatcher {
  /** The path or any folder above it matches. */
  (relativePath: string): boolean
  /** Only the path itself matches: for walkers that never enter an ignored folder. */
  readonly itself: (relativePath: string) => boolean
}

/**
 * What `get` and `restore --files` name a file while its bytes arrive, beside its target. Its
 * bytes are unverified (and, when the fetch is slow or killed, there for a while): never indexed,
 * stored or synced as a file of the folder.
 */
export const FETCH_TEMP_NAME = '.*.cidsync-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f].part'

/**
 * A pattern whose only slashes end it (`node_modules/`, `node_modules/**`) names a folder by its
 * name, which gitignore matches at any depth; answers that name, else undefined.
 */
function trailingName (pattern: string): string | undefined {
  const name = pattern.replace(/\/(\*\*)?$/, '')
  return name !== pattern && name !== '' && !name.includes('/') ? name : undefined
}

/**
 * Compiles a folder's ignore globs, the way gitignore reads them: a pattern with a `/` at its
 * start or in its middle matches from the folder's root (`/build/**`, `docs/*.tmp`; a leading
 * globstar, as in the defaults `init` writes, lets it match below the root too); one without, or with slashes only at its end,
 * matches a name at any depth (`*.tmp`, `node_modules`, `node_modules/**`, `.git/`). A path is
 * ignored when it or any folder above it matches, so a file inside an ignored tree is ignored
 * even when an event names it directly. `excluded` are exact paths (no globs) that are ignored
 * the same way: cidsync's own dirs inside the folder.
 */
export function createIgnoreMatcher (patterns: readonly string[], excluded: readonly string[] = []): IgnoreMatcher {
  const own = new Set(excluded)
  const anchored: string[] = []
  // Always: a file `get` is still writing into a folder, unverified (custody/fetch-file.ts names it).
  const named: string[] = [FETCH_TEMP_NAME]
  for (const pattern of patterns) {
    const name = pattern.includes('/') ? trailingName(pattern) : pattern
    if (name !== undefined) named.push(name)
    else anchored.push(pattern.replace(/^\/+/, ''))
  }
  const matchAnchored = anchored.length > 0 ? picomatch(anchored, { dot: true }) : () => false
  const matchName = named.length > 0 ? picomatch(named, { dot: true }) : () => false
  const itself = (path: string): boolean => {
    const name = path.slice(path.lastIndexOf('/') + 1)
    return own.has(path) || matchName(name) || matchAnchored(path) || matchAnchored(`${path}/`)
  }
  const matcher = (relativePath: string): boolean => {
    for (let end = relativePath.length; end > 0; end = relativePath.lastIndexOf('/', end - 1)) {
      if (itself(relativePath.slice(0, end))) return true
    }
    return false
  }
  return Object.assign(matcher, { itself })
}
