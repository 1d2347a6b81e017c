import type { Config } from '../config/index.js'
import { formatListenAddress, parseListenAddress } from '../config/index.js'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { CHALLENGE_PATH, isDaemonProof, newNonce, otherDaemonAt, proofHeader, readDaemonInfo, readStatusToken, STATUS_TOKEN_FILE } from '../daemon/index.js'
import { DaemonReportedError, DaemonUnprovenError, StatusUnavailableError } from '../errors.js'
import { Agent } from 'node:http'
import { loopbackRequest, type LoopbackTarget } from '../util/loopback-request.js'
import { safeText } from './safe-text.js'

export const DEFAULT_STATUS_TIMEOUT_MS = 5_000
/** The challenge's answer is two short strings. */
const MAX_CHALLENGE_BYTES = 64 * 1024
/** Far above any status document or daemon answer: past it the listener is not believed. */
const MAX_ANSWER_BYTES = 256 * 1024 * 1024

/** Where the running daemon's endpoint is: what it wrote in the state dir, else the config's address. */
export function statusAddress (config: Config): string {
  return readDaemonInfo(config.stateDir)?.status ?? formatListenAddress(config.status.listen)
}

/** GETs a path from the running daemon's status endpoint and answers the body. */
export async function getFromDaemon (config: Config, path: string): Promise<string> {
  return await askDaemon(config, 'GET', path)
}

/** How long a POST waits for a daemon that is not ready yet (still scanning, reaching the service). */
export const DEFAULT_READY_WAIT_MS = 120_000

/**
 * POSTs to the running daemon with the state dir's token; waits as long as `timeoutMs`. A daemon
 * that answers 503 (not ready yet) is asked again after its Retry-After, for up to `readyWaitMs`,
 * saying on stderr what it waits for.
 */
export async function postToDaemon (config: Config, path: string, timeoutMs = 10 * 60_000, readyWaitMs = DEFAULT_READY_WAIT_MS): Promise<string> {
  const deadline = Date.now() + readyWaitMs
  let said = ''
  for (;;) {
    try {
      return await askDaemon(config, 'POST', path, timeoutMs)
    } catch (err) {
      if (!(err instanceof DaemonNotReadyError)) throw err
      if (Date.now() + err.retryAfterMs > deadline) throw new StatusUnavailableError(`the daemon was not ready within ${Math.round(readyWaitMs / 1000)} s: ${err.message}; try again later`)
      if (err.message !== said) process.stderr.write(`cidsync: waiting for the daemon: ${safeText(err.message)}\n`)
      said = err.message
      await new Promise(resolve => setTimeout(resolve, err.retryAfterMs))
    }
  }
}

/** A 503 from the daemon: what it is still doing, and when to ask again. */
class DaemonNotReadyError extends Error {
  constructor (message: string, readonly retryAfterMs: number) {
    super(message)
  }
}

const WHAT: Record<string, string> = { '/snapshot': 'publish', '/reconcile': 'reconciliation', '/rescan': 'drift check' }

/** The daemon answered with what went wrong (`{error, code, exitCode}`): that error, as if met here. */
function reported (path: string, body: string): DaemonReportedError | undefined {
  let parsed: { error?: unknown, code?: unknown, exitCode?: unknown }
  try {
    parsed = JSON.parse(body) as typeof parsed
  } catch {
    return undefined
  }
  if (typeof parsed !== 'object' || parsed === null || typeof parsed.error !== 'string') return undefined
  const code = typeof parsed.code === 'string' ? parsed.code : 'ERR_DAEMON'
  const what = WHAT[path.split('?')[0] ?? ''] ?? `POST ${path}`
  const unreachable = code === 'ERR_REMOTE_NETWORK' ? ' (the service cannot be reached: check that it is up and this machine reaches it)' : ''
  return new DaemonReportedError(`the daemon's ${what} failed${unreachable}: ${parsed.error}`, code, typeof parsed.exitCode === 'number' ? parsed.exitCode : 1)
}

/**
 * The `Authorization` for one POST, the token never sent. The listener must first prove it holds
 * the token: it may be another user's program on the stopped daemon's port. Then the request
 * carries a single-use proof bound to it (see daemon/status-proof.ts). A GET asks the same proof
 * first, so an answer from anything but the daemon is never believed.
 */
async function proveToken (token: string, stateDir: string, target: LoopbackTarget, agent: Agent, where: string, method: string, path: string, timeoutMs: number): Promise<string> {
  const clientNonce = newNonce()
  const { statusCode, body } = await loopbackRequest(target, `${CHALLENGE_PATH}?client=${clientNonce}`, { timeoutMs, maxBytes: MAX_CHALLENGE_BYTES, agent })
  let answer: { nonce?: unknown, proof?: unknown } = {}
  try { answer = JSON.parse(body) as typeof answer } catch {}
  if (statusCode !== 200 || typeof answer.nonce !== 'string' || typeof answer.proof !== 'string' || !isDaemonProof(token, clientNonce, answer.nonce, answer.proof)) {
    const unproven = `what answers at ${where} did not prove it is this state dir's daemon (it does not know status.token; answered ${statusCode} to ${CHALLENGE_PATH}): nothing was sent to it.`
    // Two configs on the default port: the daemon there is another state dir's, and says whose.
    const other = 'port' in target ? await otherDaemonAt({ kind: 'tcp', host: target.host, port: target.port }) : undefined
    if (other !== undefined && other.stateDir !== stateDir) {
      throw new DaemonUnprovenError(`${unproven} It says it is another cidsync daemon (pid ${other.pid}, state dir ${safeText(other.stateDir)}): ` +
        'give this config its own port with [status] listen = "127.0.0.1:0" (any free one), then start its daemon')
    }
    throw new DaemonUnprovenError(`${unproven} ${'port' in target
      ? 'Is another program on the port, or an older daemon? Check with `ss -ltnp`, restart `cidsync daemon`, or set [status] listen to a unix socket'
      : 'Is another program on the socket, or an older daemon? Check with `ss -lxp`, and restart `cidsync daemon`'}`)
  }
  return proofHeader(token, method, path, answer.nonce)
}

async function askDaemon (config: Config, method: 'GET' | 'POST', path: string, timeoutMs = DEFAULT_STATUS_TIMEOUT_MS): Promise<string> {
  const where = statusAddress(config)
  const address = parseListenAddress(where)
  if ('error' in address) throw new StatusUnavailableError(`the daemon's status address ${where} is not usable: ${address.error}`)
  // Port 0: a running daemon names its port in daemon.json; with none there, nothing to ask (and "at 127.0.0.1:0" said nothing).
  if (address.kind !== 'unix' && address.port === 0) {
    throw new StatusUnavailableError(`no daemon answers for ${config.stateDir}: none is running ([status] listen is port 0, so a running daemon writes its address in daemon.json there, and there is none): start one with \`cidsync daemon\``)
  }
  const target: LoopbackTarget = address.kind === 'unix' ? { socketPath: address.path } : { host: address.host, port: address.port }
  // One connection for the challenge and the request: the proof holds for that connection alone.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  try {
    // A GET is proved too: any program on a stopped daemon's port could answer "all is well".
    const token = readStatusToken(config.stateDir)
    if (token === undefined && !existsSync(join(config.stateDir, STATUS_TOKEN_FILE))) {
      // Every daemon writes it at start: none has run here, so the sudo advice below does not apply.
      throw new StatusUnavailableError(`no daemon has run with ${config.stateDir} yet (it has no ${STATUS_TOKEN_FILE}): start one with \`cidsync daemon\``)
    }
    if (token === undefined) {
      throw new StatusUnavailableError(`${config.stateDir} holds no status.token this user can read, so nothing at ${where} can be trusted as its daemon: ` +
        'start one with `cidsync daemon`, or run this as the user the daemon runs as (`sudo -u cidsync cidsync status` for the system service)')
    }
    const proof = await proveToken(token, config.stateDir, target, agent, where, method, path, timeoutMs)
    const authorization = method === 'POST' ? proof : undefined
    const response = await loopbackRequest(target, path, { method, headers: authorization === undefined ? {} : { authorization }, timeoutMs, maxBytes: MAX_ANSWER_BYTES, agent })
    // Only the connection that proved itself is believed: a new one may reach whatever took the
    // address since (the daemon stopped between the two requests).
    if (!response.reusedSocket) throw new StatusUnavailableError(`the daemon at ${where} closed the connection it proved itself on before answering ${path}: try again`)
    const body = response.body
    if (response.statusCode === 503) {
      const seconds = Number(response.headers['retry-after'] ?? 1)
      const reason = (() => { try { return (JSON.parse(body) as { error?: string }).error } catch { return undefined } })() ?? body.trim().slice(0, 200)
      throw new DaemonNotReadyError(reason, Math.min(10_000, Math.max(250, (Number.isFinite(seconds) ? seconds : 1) * 1000)))
    }
    if (response.statusCode !== 200) throw reported(path, body) ?? new StatusUnavailableError(`the daemon at ${where} answered ${response.statusCode} to ${path}: ${body.trim().slice(0, 200)}`)
    return body
  } catch (err) {
    if (err instanceof StatusUnavailableError || err instanceof DaemonNotReadyError || err instanceof DaemonReportedError || err instanceof DaemonUnprovenError) throw err
    throw new StatusUnavailableError(notAnswered(where, address.kind, err), { cause: err })
  } finally {
    agent.destroy()
  }
}

/** Codes that mean nothing listens there: a daemon to start. Anything else is a listener that is not one. */
const NOTHING_THERE = new Set(['ECONNREFUSED', 'ENOENT', 'EADDRNOTAVAIL', 'EHOSTUNREACH', 'ENETUNREACH'])

/** Whether a failed ask met a listener that is not a daemon, or one that did not answer: worth saying even where the state dir answers instead. */
export function somethingElseListens (err: unknown): boolean {
  const code = ((err as Error | undefined)?.cause as { code?: string } | undefined)?.code
  return err instanceof DaemonUnprovenError || (err instanceof StatusUnavailableError && code !== undefined && !NOTHING_THERE.has(code))
}

/** What a failed ask says: start a daemon where nothing listens, else what else may hold the address. */
function notAnswered (where: string, kind: 'unix' | 'tcp', err: unknown): string {
  const code = (err as { code?: string }).code ?? (err as Error).message
  if (NOTHING_THERE.has(code)) return `no daemon answers at ${where} (${code}): start one with \`cidsync daemon\``
  const [holder, check] = kind === 'unix' ? ['the socket', 'ss -lxp'] : ['the port', 'ss -ltnp']
  const what = code === 'ETIMEDOUT' ? 'nothing answered in time' : 'what listens there does not answer as a cidsync daemon'
  return `no daemon answers at ${where}: ${what} (${code}). A daemon may be busy or stopping, or another program may hold ${holder}: ` +
    `check with \`${check}\`, then start or restart \`cidsync daemon\``
}
