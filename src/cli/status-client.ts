import { Agent, request } from 'undici'
import type { Config } from '../config/index.js'
import { formatListenAddress, parseListenAddress } from '../config/index.js'
import { readDaemonInfo, readStatusToken } from '../daemon/index.js'
import { StatusUnavailableError } from '../errors.js'

export const DEFAULT_STATUS_TIMEOUT_MS = 5_000

/** Where the running daemon's endpoint is: what it wrote in the state dir, else the config's address. */
export function statusAddress (config: Config): string {
  return readDaemonInfo(config.stateDir)?.status ?? formatListenAddress(config.status.listen)
}

/** GETs a path from the running daemon's status endpoint and answers the body. */
export async function getFromDaemon (config: Config, path: string): Promise<string> {
  return await askDaemon(config, 'GET', path)
}

/** POSTs to the running daemon with the state dir's token; waits as long as `timeoutMs`. */
export async function postToDaemon (config: Config, path: string, timeoutMs = 10 * 60_000): Promise<string> {
  return await askDaemon(config, 'POST', path, timeoutMs)
}

async function askDaemon (config: Config, method: 'GET' | 'POST', path: string, timeoutMs = DEFAULT_STATUS_TIMEOUT_MS): Promise<string> {
  const where = statusAddress(config)
  const address = parseListenAddress(where)
  if ('error' in address) throw new StatusUnavailableError(`the daemon's status address ${where} is not usable: ${address.error}`)
  const dispatcher = address.kind === 'unix' ? new Agent({ connect: { socketPath: address.path } }) : undefined
  const host = address.kind === 'unix' ? 'localhost' : address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`
  try {
    const token = method === 'POST' ? readStatusToken(config.stateDir) : undefined
    const response = await request(`http://${host}${path}`, {
      method,
      dispatcher,
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs)
    })
    const body = await response.body.text()
    if (response.statusCode !== 200) throw new StatusUnavailableError(`the daemon at ${where} answered ${response.statusCode} to ${path}: ${body.trim().slice(0, 200)}`)
    return body
  } catch (err) {
    if (err instanceof StatusUnavailableError) throw err
    throw new StatusUnavailableError(`no daemon answers at ${where} (${(err as { code?: string }).code ?? (err as Error).message}): start one with \`cidsync daemon\``, { cause: err })
  } finally {
    await dispatcher?.close()
  }
}
