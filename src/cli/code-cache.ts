import { createHash } from 'node:crypto'
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, type Stats } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { basename, dirname, isAbsolute, join } from 'node:path'
import { Script } from 'node:vm'
import { beforeV8FlagsChange } from '../util/v8-flags.js'

/** The environment variable that turns the code cache off (`0`), or names its directory. */
export const CODE_CACHE_ENV = 'CIDSYNC_CODE_CACHE'

const DIGEST_BYTES = 32
const PREFIX = 'cidsync-'
const SUFFIX = '.v8'

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

/**
 * Only what this user alone can write: compiled code read from a file another local user could
 * replace would run as whoever runs cidsync (root, for a system unit).
 */
function ownedAndPrivate (stats: Stats, kind: 'dir' | 'file'): boolean {
  const uid = process.getuid?.()
  if (kind === 'dir' ? !stats.isDirectory() : !stats.isFile()) return false
  if (uid !== undefined && stats.uid !== uid) return false
  return (stats.mode & (kind === 'dir' ? 0o022 : 0o077)) === 0
}

function statOrUndefined (path: string): Stats | undefined {
  try {
    return lstatSync(path)
  } catch {
    return undefined
  }
}

/**
 * The cache's file for this bundle, node's options, this node and this machine's architecture.
 * V8 refuses a cache made under other flags: the daemon's unit runs node with
 * `--max-semi-space-size=1`, a command by hand without, and each keeps its own.
 */
function cacheFile (dir: string, source: string, env: NodeJS.ProcessEnv): string {
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 32)
  const options = createHash('sha256').update(`${process.execArgv.join(' ')}\n${env.NODE_OPTIONS ?? ''}`).digest('hex').slice(0, 8)
  return join(dir, `${PREFIX}${digest}-${options}-${process.version}-${process.arch}${SUFFIX}`)
}

/**
 * The cached code for `file`, checked: a private file in a private directory of this user, whose
 * bytes hash to the digest it starts with (a file cut short by a crash, or damaged, is not given
 * to V8, which trusts what it deserialises).
 */
function readCache (dir: string, file: string): Buffer | undefined {
  const folder = statOrUndefined(dir)
  const stats = statOrUndefined(file)
  if (folder === undefined || stats === undefined || !ownedAndPrivate(folder, 'dir') || !ownedAndPrivate(stats, 'file')) return undefined
  try {
    const bytes = readFileSync(file)
    if (bytes.length <= DIGEST_BYTES) return undefined
    const data = bytes.subarray(DIGEST_BYTES)
    return createHash('sha256').update(data).digest().equals(bytes.subarray(0, DIGEST_BYTES)) ? data : undefined
  } catch {
    return undefined
  }
}

/** Keeps `data` as the cache (written aside, renamed into place), and drops the caches of other builds. Never throws. */
function writeCache (dir: string, file: string, data: Buffer): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const folder = statOrUndefined(dir)
    if (folder === undefined || !ownedAndPrivate(folder, 'dir')) return
    const temp = join(dir, `.${process.pid}.${Date.now()}.tmp`)
    try {
      writeFileSync(temp, Buffer.concat([createHash('sha256').update(data).digest(), data]), { mode: 0o600, flag: 'wx' })
      renameSync(temp, file)
    } finally {
      rmSync(temp, { force: true })
    }
    const keep = file.slice(dir.length + 1)
    const build = keep.slice(0, PREFIX.length + 32)
    for (const name of readdirSync(dir)) {
      // Another build's cache (this node's or another's): it will never be read again.
      if (name.startsWith(PREFIX) && name.endsWith(SUFFIX) && !name.startsWith(build)) rmSync(join(dir, name), { force: true })
    }
  } catch {}
}

/** What the bundle's entry exports: the command's run, which ends when the command does. */
interface Entry { readonly done?: Promise<void> }

/**
 * Runs the CLI's CommonJS bundle (`path`) as node would run it, but compiled through V8's code
 * cache: node 20 keeps none for a script, and compiling the 2 MB bundle is a fifth of a
 * command's start-up. The first run of a build compiles it as usual and keeps what V8 compiled
 * once its command has ended, or before the process first changes a V8 flag (the daemon does,
 * once it runs); the runs after read it instead. A cache that is missing, damaged, another
 * user's, or refused by V8 (another node, other flags) costs only that.
 */
export function runWithCodeCache (path: string, env: NodeJS.ProcessEnv = process.env): void {
  const source = readFileSync(path, 'utf8')
  const dir = codeCacheDir(env)
  const file = dir === undefined ? undefined : cacheFile(dir, source, env)
  const cachedData = dir === undefined || file === undefined ? undefined : readCache(dir, file)
  // The wrapper node gives a CommonJS module, on the source's first line (its line numbers stay).
  // No loader for `import()`: node 20's (USE_MAIN_CONTEXT_DEFAULT_LOADER) is experimental and
  // lost by a script compiled from a cache; the bundle requires what it loads (util/undici.ts).
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename: path, cachedData })
  const module = { exports: {} as Entry }
  const write = dir !== undefined && file !== undefined && (cachedData === undefined || script.cachedDataRejected === true)
  let kept = !write
  // Late, so the cache holds the functions the command compiled on the way, not only the top
  // level; but under the flags it started with.
  const keep = (): void => {
    if (kept || dir === undefined || file === undefined) return
    kept = true
    writeCache(dir, file, script.createCachedData())
  }
  if (write) beforeV8FlagsChange(keep)
  const wrapper = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void
  wrapper.call(module.exports, module.exports, createRequire(path), module, path, dirname(path))
  // A run that fails still rejects (this is not its handler: node reports it as before).
  if (write) void module.exports.done?.then(keep)
}
