import { createHash } from 'node:crypto'
import { closeSync, constants, fstatSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Script } from 'node:vm'
import { processAlive } from '../util/process-alive.js'
import { beforeV8FlagsChange } from '../util/v8-flags.js'
import { codeCacheDir, privateTo, secureCacheDir } from './code-cache-dir.js'

export { CODE_CACHE_ENV, codeCacheDir } from './code-cache-dir.js'

const DIGEST_BYTES = 32
const PREFIX = 'cidsync-'
const SUFFIX = '.v8'
/** Far larger than any cache of the bundle: a file past it is not read. */
const MAX_CACHE_BYTES = 64 * 1024 * 1024
/** Caches kept in the directory (two installs, or two node versions, side by side keep theirs). */
const KEPT_CACHES = 4
const TEMP = /^\.(\d+)\.\d+\.tmp$/

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
 * The cached code in `file`, checked. It must be a private regular file of this user, asked of the
 * file opened, not of its name. Its bytes must hash to the digest it starts with. V8 trusts what it
 * deserialises, so a file cut short by a crash, or damaged, is not given to it.
 */
function readCache (file: string): Buffer | undefined {
  let fd: number | undefined
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    const stats = fstatSync(fd)
    if (!privateTo(stats, 'file') || stats.size <= DIGEST_BYTES || stats.size > MAX_CACHE_BYTES) return undefined
    const bytes = Buffer.allocUnsafe(stats.size)
    let read = 0
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, read)
      if (n === 0) return undefined
      read += n
    }
    const data = bytes.subarray(DIGEST_BYTES)
    return createHash('sha256').update(data).digest().equals(bytes.subarray(0, DIGEST_BYTES)) ? data : undefined
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/**
 * Keeps `data` as the cache (written aside, renamed into place) in a directory only this user can
 * change; removes what killed runs left and all but the newest caches. Never throws.
 */
function writeCache (dir: string, file: string, data: Buffer): void {
  try {
    const temp = join(dir, `.${process.pid}.${Date.now()}.tmp`)
    try {
      writeFileSync(temp, Buffer.concat([createHash('sha256').update(data).digest(), data]), { mode: 0o600, flag: 'wx' })
      renameSync(temp, file)
    } finally {
      rmSync(temp, { force: true })
    }
    const names = readdirSync(dir)
    for (const name of names) {
      const pid = TEMP.exec(name)?.[1]
      if (pid !== undefined && !processAlive(Number(pid))) rmSync(join(dir, name), { force: true })
    }
    const caches = names.filter(name => name.startsWith(PREFIX) && name.endsWith(SUFFIX))
      .map(name => ({ name, at: statSync(join(dir, name)).mtimeMs }))
      .sort((a, b) => b.at - a.at)
    for (const { name } of caches.slice(KEPT_CACHES)) if (join(dir, name) !== file) rmSync(join(dir, name), { force: true })
  } catch {}
}

/** What the bundle's entry exports: the command's run, which ends when the command does. */
interface Entry { readonly done?: Promise<void> }

/**
 * Runs the CLI's CommonJS bundle (`path`) as node would run it, but compiled through V8's code
 * cache: node 20 keeps none for a script, and compiling the bundle is a large part of a command's
 * start-up. The first run of a build compiles it as usual, and keeps what V8 compiled. It keeps
 * it once its command has ended, or before the process first changes a V8 flag (the daemon does,
 * once it runs). The runs after read it instead. A cache that is missing, damaged, another
 * user's, or refused by V8 (another node, other flags) costs only that. `keep: false` reads a
 * cache but keeps none (`--version`, `--help`: they compile next to nothing of the CLI).
 */
export function runWithCodeCache (path: string, init: { readonly env?: NodeJS.ProcessEnv, readonly keep?: boolean } = {}): void {
  const env = init.env ?? process.env
  const wanted = codeCacheDir(env)
  // With --enable-source-maps, node's own loader, which maps the bundle's stack traces (a script
  // compiled here is not mapped); with no cache, no reason not to.
  if (wanted === undefined || process.sourceMapsEnabled) {
    createRequire(import.meta.url)(path)
    return
  }
  const source = readFileSync(path, 'utf8')
  const dir = secureCacheDir(wanted)
  const file = dir === undefined ? undefined : cacheFile(dir, source, env)
  const cachedData = file === undefined ? undefined : readCache(file)
  // The wrapper node gives a CommonJS module, on the source's first line (its line numbers stay).
  // No loader for `import()`: node 20's (USE_MAIN_CONTEXT_DEFAULT_LOADER) is experimental and
  // lost by a script compiled from a cache; the bundle requires what it loads (util/undici.ts).
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename: path, cachedData })
  const module = { exports: {} as Entry }
  const write = init.keep !== false && dir !== undefined && file !== undefined && (cachedData === undefined || script.cachedDataRejected === true)
  let kept = !write
  // Late, so the cache holds the functions the command compiled on the way, not only the top
  // level; but under the flags it started with.
  const keep = (): void => {
    if (kept || dir === undefined || file === undefined) return
    kept = true
    // Never the command's failure: it runs where a V8 flag is set (setV8Flag), or as it ends.
    try {
      writeCache(dir, file, script.createCachedData())
    } catch {}
  }
  if (write) beforeV8FlagsChange(keep)
  const wrapper = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void
  wrapper.call(module.exports, module.exports, createRequire(path), module, path, dirname(path))
  // A run that fails still rejects (this is not its handler: node reports it as before).
  if (write) void module.exports.done?.then(keep)
}
