import { formatListenAddress, type Config, type ListenAddress } from '../config/index.js'
import { ListenError } from '../errors.js'
import { loopbackRequest } from '../util/loopback-request.js'

/** Longer than any path a system takes (PATH_MAX is 4096 bytes on Linux). */
const MAX_STATE_DIR_CHARS = 4096

/** Who holds a status address: another cidsync daemon, as its own `/status` says. */
export interface OtherDaemon { readonly pid: number, readonly stateDir: string, readonly version: string }

/**
 * Asks whatever listens at `address` for its `/status` (2 s at most): another cidsync daemon
 * answers with its pid and state dir; anything else (or nothing) answers undefined.
 */
export async function otherDaemonAt (address: ListenAddress): Promise<OtherDaemon | undefined> {
  if (address.kind !== 'tcp') return undefined
  try {
    const answer = await loopbackRequest({ host: address.host, port: address.port }, '/status', { timeoutMs: 2_000, maxBytes: 4_000_000 })
    const text = answer.body
    if (answer.statusCode !== 200) return undefined
    const doc = JSON.parse(text) as Record<string, unknown>
    if (typeof doc.pid !== 'number' || typeof doc.stateDir !== 'string' || typeof doc.version !== 'string') return undefined
    // Only what a daemon could say is believed: a pid, and a path no longer than a path can be
    // (it is printed; what holds the port proved nothing and may say anything).
    if (!Number.isSafeInteger(doc.pid) || doc.pid <= 0 || doc.stateDir.length === 0 || doc.stateDir.length > MAX_STATE_DIR_CHARS || doc.version.length > 100) return undefined
    return { pid: doc.pid, stateDir: doc.stateDir, version: doc.version }
  } catch {
    return undefined
  }
}

/**
 * The address is taken: by another cidsync daemon (the quick start's and `init`'s configs share
 * the default port), say whose and what to change; anything else as the server said it.
 */
export async function explainListenError (err: unknown, config: Config): Promise<unknown> {
  if (!(err instanceof ListenError) || (err.cause as NodeJS.ErrnoException | undefined)?.code !== 'EADDRINUSE') return err
  const other = await otherDaemonAt(config.status.listen)
  if (other === undefined) return err
  return new ListenError(`the status endpoint cannot listen on ${formatListenAddress(config.status.listen)}: another cidsync daemon listens there ` +
    `(pid ${other.pid}, state dir ${other.stateDir}): give this config its own port with [status] listen = "127.0.0.1:0" (any free one; \`cidsync status\` finds it) or another fixed port`, { cause: err })
}
