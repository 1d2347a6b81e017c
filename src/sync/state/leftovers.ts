import { lstat, readdir, rm, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { processAlive } from '../../util/process-alive.js'
import { STATE_NAMES } from '../../config/index.js'

/**
 * Temp files a publish, merge, restore or gateway fetch killed midway leaves behind, by the names
 * they are made under (`snapshots/`, the restore's staging beside the index, `content-spool/`). Only these names
 * are touched: anything else in the state dir is not ours to remove.
 */
const SNAPSHOT_DIR_PATTERNS = [
  // Every file a job makes there starts with its label: segments, manifests, fetched and opened files, their temps.
  /^(publish|pull|merge|restore|mirror(?!-history-))-[A-Za-z0-9.-]+$/
]
/**
 * What commands that take no lock fetch or build there, named by their label and pid (`verify`,
 * `history`, `log`, the pointer's checks, a mirror's drill): a run beside this one may own them, so
 * only those of a process gone are removed. `verify-content-<pid>` is a directory.
 */
const LOCKLESS_RUN = /^(?:verify|verify-content|verify-empty|history|mirror-history|check|log)-(\d{1,10})(?:[-.]|$)/
const STATE_DIR_PATTERNS = [/^index\.sqlite\.restoring(\.\d+\.restore)?(-wal|-shm|-journal)?$/]
/**
 * Pack and part files a killed content upload left in the spool (`custody/content-storer.ts`,
 * `custody/seal-worker.ts`), and content index objects sealed or fetched there, with their temps
 * (`sync/storing/content-index.ts`).
 */
const CONTENT_SPOOL_PATTERNS = [/^(pack|part)-[0-9a-f]{16}\.tmp$/, /^index-[0-9a-f]{16}\.(sealed|fetched)(\.json)?(\.\d{1,10}\.(part|unseal))?$/]
/** `util/atomic-write.ts` temps; commands that write without the lock (`key import`) may own a fresh one. */
const ATOMIC_TEMP = /^\..+\.[0-9a-f]{12}\.tmp$/
const ATOMIC_TEMP_AGE_MS = 10 * 60_000
/** `get`/`restore --files` fetch objects into `content-fetch/<pid>/`; `get --at` builds `snapshots/past-<pid>-<ms>.sqlite`. */
const PID_DIR = /^\d{1,10}$/
const PAST_INDEX = /^past-(\d{1,10})-\d+\.sqlite(-wal|-shm|-journal)?$/
/**
 * `export`, `import`, `forget` and `prune` (no lock: they run beside the daemon) fetch under their
 * label and pid (`export-content-<pid>.sqlite`, the index an export with --content builds aside;
 * `import-<pid>-...`, what the chain check fetched; `prune-<pid>-...`, the segments a prune reads;
 * `forget-<pid>-...`, the manifests a forget seals; `prune-list-<pid>-...`, the list a prune seals
 * or a publish fetches): a run killed midway left them for good.
 */
const EXIT_FILE = /^(?:export|import|forget|prune)-(?:content-|list-)?(\d{1,10})[-.]/

/**
 * How long a lockless run's names stay after its process seems gone. A run in another PID
 * namespace (a container sharing the state dir) looks gone from here while it runs; a drill
 * rarely runs a day, and a leftover then waits at most that long.
 */
const LOCKLESS_RUN_AGE_MS = 24 * 60 * 60_000

/**
 * Removes what runs that take no lock left in the state dir's `snapshots/` when killed midway:
 * `export`, `import`, `forget` and `prune` ({@link EXIT_FILE}), whose process is gone; and the
 * drills and reads of {@link LOCKLESS_RUN} (a `verify --content` stopped with Ctrl-C leaves its
 * index and objects), whose process is gone and which no one touched for {@link LOCKLESS_RUN_AGE_MS}.
 * Safe without the lock, beside a running daemon. Only in a `snapshots/` that is this user's own
 * directory, written by no one else: never through a link. An export, a forget, a prune and a
 * drill call it before they begin.
 */
export async function removeDeadRunFiles (stateDir: string, now = Date.now()): Promise<void> {
  const snapshots = join(stateDir, STATE_NAMES.snapshots)
  if (!await ownPrivateDir(snapshots)) return
  for (const name of await names(snapshots)) {
    if (!await leftByGoneRun(snapshots, name, [LOCKLESS_RUN], now)) continue
    // Best effort: a file this user may not remove must not stop the run. A drill's scratch is a directory.
    await rm(join(snapshots, name), { recursive: true, force: true }).catch(() => {})
  }
}

/**
 * Whether `name` in `snapshots` is what a run now gone left: an {@link EXIT_FILE} name whose process
 * is gone, or a name of `lockless` whose process is gone and which no one touched for
 * {@link LOCKLESS_RUN_AGE_MS} (the lock keeps no lockless run out, and one in another PID namespace may run).
 */
async function leftByGoneRun (snapshots: string, name: string, lockless: readonly RegExp[], now: number): Promise<boolean> {
  const exited = EXIT_FILE.exec(name)
  if (exited !== null) return !processAlive(Number(exited[1]))
  const run = lockless.map(pattern => pattern.exec(name)).find(match => match !== null)
  return run !== undefined && run !== null && !processAlive(Number(run[1])) && await untouchedFor(join(snapshots, name), now)
}

/** Whether no one touched `path` (the entry itself, not through a link) for {@link LOCKLESS_RUN_AGE_MS}. */
async function untouchedFor (path: string, now: number): Promise<boolean> {
  const stats = await lstat(path).catch(() => undefined)
  return stats !== undefined && now - stats.mtimeMs >= LOCKLESS_RUN_AGE_MS
}

/** Whether `dir` is a directory (not a link) of this process's user that no one else may write. */
async function ownPrivateDir (dir: string): Promise<boolean> {
  const stats = await lstat(dir).catch(() => undefined)
  if (stats === undefined || !stats.isDirectory()) return false
  return (process.getuid === undefined || stats.uid === process.getuid()) && (stats.mode & 0o022) === 0
}

/** Removes the object dirs of `get` runs killed midway (fetched packs, possibly plain content); answers the bytes freed. */
async function removeDeadFetches (stateDir: string, removed: string[]): Promise<number> {
  const root = join(stateDir, STATE_NAMES.contentFetch)
  let bytes = 0
  for (const name of await ownPrivateDir(root) ? await names(root) : []) {
    if (!PID_DIR.test(name) || processAlive(Number(name))) continue
    bytes += await removeDir(join(root, name))
    removed.push(join(root, name))
  }
  return bytes
}

/** Removes a scratch dir and all under it; answers the bytes of the files at its top (a fair count of what it held). */
async function removeDir (dir: string): Promise<number> {
  let bytes = 0
  for (const file of await names(dir)) bytes += (await stat(join(dir, file)).catch(() => undefined))?.size ?? 0
  await rm(dir, { recursive: true, force: true })
  return bytes
}

/** A state dir never holds more than a handful: stop looking after this many names. */
const MAX_NAMES = 10_000

export interface LeftoversRemoved { readonly files: number, readonly bytes: number, readonly paths: readonly string[] }

async function names (dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).slice(0, MAX_NAMES)
  } catch {
    return []
  }
}

/**
 * Removes what killed jobs left behind. Call it holding the state dir's lock (no publish or
 * restore can be running); `keep` is the unfinished publish's files, which it resumes from. The
 * names of runs that take no lock (a drill, `get --at`) go only as {@link removeDeadRunFiles} says.
 */
export async function removeLeftovers (stateDir: string, keep: readonly string[], now = Date.now()): Promise<LeftoversRemoved> {
  const candidates: string[] = []
  const snapshots = join(stateDir, STATE_NAMES.snapshots)
  // Never through a link, nor in a folder another user may write: names there need not be ours.
  for (const name of await ownPrivateDir(snapshots) ? await names(snapshots) : []) {
    if (SNAPSHOT_DIR_PATTERNS.some(p => p.test(name)) || await leftByGoneRun(snapshots, name, [PAST_INDEX, LOCKLESS_RUN], now)) candidates.push(join(snapshots, name))
  }
  for (const name of await names(stateDir)) {
    if (STATE_DIR_PATTERNS.some(p => p.test(name))) candidates.push(join(stateDir, name))
    else if (ATOMIC_TEMP.test(name)) {
      const stats = await stat(join(stateDir, name)).catch(() => undefined)
      if (stats !== undefined && now - stats.mtimeMs > ATOMIC_TEMP_AGE_MS) candidates.push(join(stateDir, name))
    }
  }
  const spool = join(stateDir, STATE_NAMES.contentSpool)
  for (const name of await ownPrivateDir(spool) ? await names(spool) : []) {
    if (CONTENT_SPOOL_PATTERNS.some(p => p.test(name))) candidates.push(join(spool, name))
  }
  const removed: string[] = []
  let bytes = await removeDeadFetches(stateDir, removed)
  for (const path of candidates) {
    if (keep.includes(path)) continue
    const stats = await lstat(path).catch(() => undefined)
    if (stats?.isDirectory() === true && LOCKLESS_RUN.test(basename(path))) {
      // A drill's scratch dir (its fetched objects, its temps): gone with its process.
      bytes += await removeDir(path)
      removed.push(path)
      continue
    }
    if (stats === undefined || !stats.isFile()) continue
    await rm(path, { force: true })
    removed.push(path)
    bytes += stats.size
  }
  return { files: removed.length, bytes, paths: removed }
}
