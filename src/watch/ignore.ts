import picomatch from 'picomatch'

/** Tells whether a path relative to a watched folder (`/`-separated) is ignored. */
export interface IgnoreMatcher {
  /** The path or any folder above it matches. */
  (relativePath: string): boolean
  /** Only the path itself matches: for walkers that never enter an ignored folder. */
  readonly itself: (relativePath: string) => boolean
}

/**
 * Compiles a folder's ignore globs. A pattern with a `/` matches from the folder's root
 * (`.git/**`, `build/out`); one without matches a name at any depth (`*.tmp`, `node_modules`).
 * A path is ignored when it or any folder above it matches, so a file inside an ignored tree is
 * ignored even when an event names it directly. `excluded` are exact paths (no globs) that are
 * ignored the same way: cidsync's own dirs inside the folder.
 */
export function createIgnoreMatcher (patterns: readonly string[], excluded: readonly string[] = []): IgnoreMatcher {
  const own = new Set(excluded)
  const anchored = patterns.filter(p => p.includes('/'))
  const named = patterns.filter(p => !p.includes('/'))
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
