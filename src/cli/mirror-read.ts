import type { Config } from '../config/index.js'
import type { Repository } from '../sync/index.js'
import { CidsyncError, ContentNotFoundError, GatewayFetchError, IntegrityError, MirrorBehindError, MirrorsFailedError, PointerNotFoundError, SegmentUnusableError } from '../errors.js'
import { resolve } from 'node:path'
import { homeFailed, pathBackend, pathMirror, type ObjectHome } from '../store/index.js'

/** What a read needs of a home: its clients, the repository over them, and a name for messages. */
export interface ReadSource { readonly clients: ObjectHome, readonly repository: Repository, readonly describe: string }

/**
 * A failure of the home read from (its pointer, its gateways, what they gave; the home missing or
 * unreachable, as its backend says: a directory's disk not mounted): another home may do better.
 */
export function serviceFailed (err: unknown): boolean {
  return err instanceof GatewayFetchError || err instanceof ContentNotFoundError || err instanceof PointerNotFoundError ||
    err instanceof IntegrityError || err instanceof SegmentUnusableError || homeFailed(err)
}

/**
 * A home made ready before it is read: a path that is no store (a disk not mounted, a file) fails
 * once, here. A read that counts each file's failure would otherwise fail every file.
 */
async function opened<S extends { readonly ready: () => Promise<void> }> (source: S): Promise<S> {
  await source.ready()
  return source
}

/**
 * Runs a read against one home: `from` names a mirror (read alone, nothing from the primary);
 * else the primary, and when it fails for a reason of its own (pointer, gateways, bytes) and
 * `fallBack` allows, each mirror in the config's order, saying so on stderr. All failing: one
 * error naming each reason.
 */
export async function readFrom<T> (config: Config, options: { readonly from?: string, readonly fallBack: boolean }, fn: (source: ReadSource, where: string) => Promise<T>): Promise<T> {
  const { connectMirror, connectService, findMirror } = await import('../connect/index.js')
  const { Repository } = await import('../sync/index.js')
  // One passphrase and sync store for every home tried: the first repository's.
  let first: Repository | undefined
  const over = async (home: { readonly clients: ObjectHome, readonly describe: string }, where: string): Promise<T> => {
    const repository = first === undefined ? (first = new Repository(config, home.clients)) : first.other(home.clients)
    try {
      return await fn({ clients: home.clients, describe: home.describe, repository }, where)
    } finally {
      if (repository !== first) await repository.close()
    }
  }
  try {
    return await readFromHomes(config, options, over, connectMirror, connectService, findMirror)
  } finally {
    await first?.close()
  }
}

/** The home at a path, by the backend that reads paths: never made, only read. */
function readPath (path: string): { readonly clients: ObjectHome, readonly describe: string, ready: () => Promise<void>, close: () => Promise<void> } {
  const backend = pathBackend()
  const opened = backend.open({ mirror: pathMirror(path) })
  return { clients: opened.home, describe: `the ${backend.noun} store ${path}`, ready: opened.ready, close: opened.close }
}

async function readFromHomes<T> (
  config: Config, options: { readonly from?: string, readonly fallBack: boolean },
  fn: (home: { readonly clients: ObjectHome, readonly describe: string }, where: string) => Promise<T>,
  connectMirror: typeof import('../connect/index.js')['connectMirror'],
  connectService: typeof import('../connect/index.js')['connectService'],
  findMirror: typeof import('../connect/index.js')['findMirror']
): Promise<T> {
  if (options.from !== undefined) {
    // A path (a mirror's name never holds a slash): the store there read alone, never made.
    const directory = options.from.includes('/') ? resolve(options.from) : undefined
    const mirror = directory === undefined ? connectMirror(config, findMirror(config, options.from)) : readPath(directory)
    const where = directory === undefined ? `mirror ${options.from}` : `${pathBackend().noun} ${directory}`
    try {
      return await fn(await opened(mirror), where)
    } catch (err) {
      // Read from one home alone: whatever failed, the user reads which.
      if (err instanceof CidsyncError && !err.message.startsWith(where)) err.message = `${where}: ${err.message}`
      throw err
    } finally {
      await mirror.close()
    }
  }
  const failures: string[] = []
  try {
    const primary = await connectService(config)
    try {
      return await fn(primary, 'the primary')
    } finally {
      await primary.close()
    }
  } catch (err) {
    if (!options.fallBack || config.mirrors.length === 0 || !serviceFailed(err)) throw err
    failures.push(`the primary: ${(err as Error).message}`)
    process.stderr.write(`cidsync: the primary failed: ${(err as Error).message}\ncidsync: reading from the mirrors instead, in order: ${config.mirrors.map(m => m.name).join(', ')}\n`)
  }
  // A mirror that lags (an older publish than this device knows) is passed over for the next; if
  // none does better, that refusal is the answer, not a bare "every mirror failed".
  let behind: MirrorBehindError | undefined
  for (const m of config.mirrors) {
    const mirror = connectMirror(config, m)
    try {
      const result = await fn(await opened(mirror), `mirror ${m.name}`)
      process.stderr.write(`cidsync: read from mirror ${m.name} (the primary failed)\n`)
      return result
    } catch (err) {
      if (err instanceof MirrorBehindError) {
        behind ??= err
        failures.push(err.message)
        process.stderr.write(`cidsync: mirror ${m.name} holds an older publish than this device knows: passed over\n`)
        continue
      }
      if (!serviceFailed(err)) throw err
      failures.push(`mirror ${m.name}: ${(err as Error).message}`)
      process.stderr.write(`cidsync: mirror ${m.name} failed too: ${(err as Error).message}\n`)
    } finally {
      await mirror.close()
    }
  }
  if (behind !== undefined) throw new MirrorBehindError(`${failures[0] ?? 'the primary failed'}; ${behind.message}`)
  throw new MirrorsFailedError(`the primary and every mirror failed: ${failures.join('; ')}: check the services and the network; \`restore --from NAME\` reads one mirror`)
}

/** The `--from` option's words, for every command that reads the history from one home. */
export const FROM_OPTION_HELP = 'read this [[mirrors]] table alone, or a directory store at a path (one holding a /), not the primary'

/**
 * Runs a read of the history on one home: the mirror or directory `from` names, else the primary
 * (with no fall-back: the history a command shows is the home it names).
 */
export async function readHistoryFrom<T> (options: { readonly config?: string, readonly from?: string }, fn: (repository: Repository, where: string) => Promise<T>): Promise<T> {
  if (options.from === undefined) {
    const { withReads } = await import('./service-command.js')
    return await withReads(options, async (repository) => await fn(repository, 'the primary'))
  }
  const { loadConfig } = await import('../config/index.js')
  const config = loadConfig({ configPath: options.config })
  return await readFrom(config, { from: options.from, fallBack: false }, async ({ repository }, where) => await fn(repository, where))
}
