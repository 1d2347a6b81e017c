import { lstatSync, readFileSync, realpathSync, type Stats } from 'node:fs'
import { homedir } from 'node:os'
import { basename, dirname, isAbsolute, join } from 'node:path'
import { makeDirsSync } from '../util/make-dirs.js'

/** The environment variable that turns the code cache off (`0`), or names its directory. */
export const CODE_CACHE_ENV = 'CIDSYNC_CODE_CACHE'

/** The deepest a cache directory may lie (a bound on the walks below). */
const MAX_DEPTH = 64

/**
 * Where V8's code cache of the CLI's bundle is kept: `$CIDSYNC_CODE_CACHE` (an absolute path),
 * else the unit's `CacheDirectory=cidsync` (systemd's `$CACHE_DIRECTORY`, when it is cidsync's),
 * else `$XDG_CACHE_HOME/cidsync`, else `~/.cache/cidsync`; none with `CIDSYNC_CODE_CACHE=0` or no
 * home. A relative path is not taken (as the XDG spec says of its own): it would follow the
 * working directory.
 */
export function codeCacheDir (env: NodeJS.ProcessEnv = process.env): string | undefined {
  const chosen = env[CODE_CACHE_ENV]
  if (chosen === '0') return undefined
  if (chosen !== undefined && isAbsolute(chosen)) return chosen
  const unit = env.CACHE_DIRECTORY?.split(':').find(dir => isAbsolute(dir) && basename(dir) === 'cidsync')
  if (unit !== undefined) return unit
  const xdg = env.XDG_CACHE_HOME
  if (xdg !== undefined && isAbsolute(xdg)) return join(xdg, 'cidsync')
  const home = safeHome()
  return home === undefined ? undefined : join(home, '.cache', 'cidsync')
}

function safeHome (): string | undefined {
  try {
    const home = homedir()
    return home === '' ? undefined : home
  } catch {
    return undefined
  }
}

const uid = (): number | undefined => process.getuid?.()

/** This user's, or root's (which this user trusts anyway). */
const trustedOwner = (stats: Stats): boolean => uid() === undefined || stats.uid === uid() || stats.uid === 0

/** This user's alone: owned by it, and no one else may write it (a file: nor read it). */
export function privateTo (stats: Stats, kind: 'dir' | 'file'): boolean {
  if (kind === 'dir' ? !stats.isDirectory() : !stats.isFile()) return false
  if (uid() !== undefined && stats.uid !== uid()) return false
  return (stats.mode & (kind === 'dir' ? 0o022 : 0o077)) === 0
}

/**
 * A directory on the way that no other user can change: owned by this user or root, and writable
 * by no one else, or sticky (`/tmp`: others may add names there, never move this user's).
 */
function safeOnTheWay (stats: Stats): boolean {
  return stats.isDirectory() && trustedOwner(stats) && ((stats.mode & 0o022) === 0 || (stats.mode & 0o1000) !== 0)
}

function lstatOrUndefined (path: string): Stats | undefined {
  try {
    return lstatSync(path)
  } catch {
    return undefined
  }
}

/**
 * Whether, by `/proc/self/mountinfo`, `dir` lies on a filesystem whose owners a user may have
 * written: mounted `nosuid` (a USB stick or disk image a user mounts through udisks, an fstab
 * `user` entry) or through FUSE. On those, "owned by root" says nothing, so root takes no cache
 * there. Unreadable (not Linux): false.
 */
export function onUserMount (dir: string, mountinfo?: string): boolean {
  let text = mountinfo
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/mountinfo', 'utf8')
    } catch {
      return false
    }
  }
  let best: { point: string, user: boolean } | undefined
  for (const line of text.split('\n')) {
    const [mount, fs] = line.split(' - ')
    const fields = mount?.split(' ') ?? []
    // Mount points are octal-escaped (a space is \040).
    const point = (fields[4] ?? '').replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)))
    if (point === '' || !(dir === point || dir.startsWith(point.endsWith('/') ? point : `${point}/`))) continue
    if (best !== undefined && point.length < best.point.length) continue
    const options = (fields[5] ?? '').split(',')
    const type = fs?.split(' ')[0] ?? ''
    best = { point, user: options.includes('nosuid') || type.startsWith('fuse') }
  }
  return best?.user ?? false
}

/**
 * The cache directory as a real path (no symbolic link left in it) that only this user can
 * change, made (0700) if it is not there: every directory above it this user's or root's and
 * open to no one else's writes, and the directory itself this user's alone. Compiled code read
 * from a file another local user could swap, or reach through a directory they could swap (a
 * root command run with another user's `HOME`), would run as whoever runs cidsync; there is then
 * no cache. Undefined, never an error, when it cannot be had.
 */
export function secureCacheDir (wanted: string): string | undefined {
  try {
    // The deepest part that exists, resolved once; the rest is made under that real path.
    const missing: string[] = []
    let existing = wanted
    while (lstatOrUndefined(existing) === undefined) {
      if (missing.length >= MAX_DEPTH || dirname(existing) === existing) return undefined
      missing.unshift(basename(existing))
      existing = dirname(existing)
    }
    const real = realpathSync(existing)
    let ancestor = real
    for (let depth = 0; depth < MAX_DEPTH; depth++) {
      const stats = lstatOrUndefined(ancestor)
      if (stats === undefined || !safeOnTheWay(stats)) return undefined
      if (dirname(ancestor) === ancestor) break
      ancestor = dirname(ancestor)
    }
    // No one else can add a name under `real` now: what is made there, or found made, is ours.
    const dir = join(real, ...missing)
    makeDirsSync(dir, 0o700)
    const own = lstatOrUndefined(dir)
    if (own === undefined || !privateTo(own, 'dir')) return undefined
    return uid() === 0 && onUserMount(dir) ? undefined : dir
  } catch {
    return undefined
  }
}
