import type { Command } from 'commander'
import type { Repository } from '../sync/index.js'
import type { Config } from '../config/index.js'
import { loadConfig } from '../config/index.js'
import type { ServiceConnection } from '../connect/index.js'
import type { ServiceClients } from '../remote/index.js'
import type { ObjectHome } from '../store/index.js'
import { PointerNotFoundError, RemoteNetworkError, RemoteStatusError } from '../errors.js'
import { safeText } from './safe-text.js'

/** Adds the options every service command takes. */
export function serviceOptions (command: Command): Command {
  return command.option('--config <path>', 'config file').option('--json', 'print JSON')
}

/** Loads the config, reaches the service it names (starting the embedded one if so), runs `fn`, closes. */
export async function withService<T> (options: { config?: string }, fn: (connection: ServiceConnection & { readonly repository: Repository<ServiceClients> }, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig({ configPath: options.config })
  const { connectService } = await import('../connect/index.js')
  const connection = await connectService(config)
  return await overRepository(config, connection.clients, connection, async (repository) => await fn({ ...connection, repository }, config))
}

/**
 * {@link withService} for a read of the history (`history`, `find --at`, `log`): the embedded
 * service is started only if the read needs more than its database answers in this process.
 */
export async function withReads<T> (options: { config?: string }, fn: (repository: Repository) => Promise<T>): Promise<T> {
  const config = loadConfig({ configPath: options.config })
  const { connectReads } = await import('../connect/index.js')
  const connection = await connectReads(config)
  return await overRepository(config, connection.home, connection, fn)
}

/** Runs `fn` with the repository over `home`, then closes both. */
async function overRepository<H extends ObjectHome, T> (config: Config, home: H, connection: { close: () => Promise<void> }, fn: (repository: Repository<H>) => Promise<T>): Promise<T> {
  const { Repository } = await import('../sync/index.js')
  const repository = new Repository(config, home)
  try {
    return await fn(repository)
  } catch (err) {
    if (config.mirrors.length > 0 && primaryDown(err)) {
      // The mirrors are the second home for exactly this moment: say which commands read them.
      const names = config.mirrors.map(m => safeText(m.name)).join(', ')
      process.stderr.write(`cidsync: the primary service did not answer; the mirrors (${names}) hold a copy: \`cidsync verify --mirror NAME\` checks one, \`cidsync restore --from NAME\` and \`cidsync get --from NAME\` read one\n`)
    }
    throw err
  } finally {
    await repository.close()
    await connection.close()
  }
}

/**
 * Which service was asked for a pointer, and what to do when it holds none. Each embedded service
 * dir is an account of its own: a new device on the default finds nothing another device published.
 */
export function pointerAskedOf (config: Config): string {
  if (config.service.mode === 'embedded') {
    return `asked the embedded service at ${config.service.dir}, a separate account per service dir. ` +
      'To restore what another device published, both must use the same service and the same namespace and network: set `[service] dir` to the service dir that device uses ' +
      '(a shared folder), or `mode = "remote"` with the same service on both, and `namespace` as that device has it; else publish from this device first (`cidsync snapshot`)'
  }
  return `asked the pointer service at ${config.service.pointerUrl}. Check that this device uses the same service and account ` +
    '(session token) as the device that published, and the same namespace and network; else publish from this device first (`cidsync snapshot`)'
}

/**
 * A missing pointer said with which service was asked ({@link pointerAskedOf}); other errors as
 * they are. `mirror`: the read was from that mirror (its describe), not the primary the config names.
 */
export function explainMissingPointer (err: unknown, config: Config, mirror?: string, restoring = false): unknown {
  if (!(err instanceof PointerNotFoundError)) return err
  // A new device whose only copy is a USB disk: restore reads it with --from, and nothing said so.
  const elsewhere = restoring && config.mirrors.length === 0 ? '; or restore from a mirror or a directory store (a USB disk): `cidsync restore --from NAME|PATH` (docs/mirrors.md)' : ''
  const asked = mirror === undefined
    ? pointerAskedOf(config) + elsewhere
    : `asked ${mirror}: nothing has been copied there yet (\`cidsync status\` shows what waits for it), or it was signed in to as another account than the devices that publish there (\`cidsync login --mirror\`)`
  return new PointerNotFoundError(err.namespace, err.network, { cause: err, asked })
}

/** No answer, or a 5xx after the retries: the primary is down, not this request wrong. */
function primaryDown (err: unknown): boolean {
  return err instanceof RemoteNetworkError || (err instanceof RemoteStatusError && err.status >= 500)
}
