import { ContentNotFoundError, GatewayFetchError, IntegrityError, RemoteNotFoundError } from '../errors.js'
import type { HttpClient } from './http-client.js'
import type { SourceTry } from '../store/index.js'

/** What one gateway's try tells the failover beyond its error. */
export type GatewayTry = SourceTry

/**
 * Tries `attempt` with each gateway in order until one answers; a try that fails is that
 * gateway's failure and the next is asked. All failing: an IntegrityError when any gave bytes
 * that were not the CID's, ContentNotFoundError when each answered 404, else GatewayFetchError
 * naming each failure. An aborted signal ends it at once with the abort.
 */
export async function eachGateway<T> (gateways: readonly HttpClient[], cid: string, signal: AbortSignal | undefined, attempt: (gateway: HttpClient, tried: GatewayTry) => Promise<T>): Promise<T> {
  const failures: string[] = []
  let integrity = false
  let notFound = 0
  for (const gateway of gateways) {
    const tried: GatewayTry = { wrongBytes: false }
    try {
      return await attempt(gateway, tried)
    } catch (err) {
      if (tried.fatal !== undefined) throw tried.fatal.err
      if (signal?.aborted === true) throw err
      if (tried.wrongBytes || err instanceof IntegrityError) integrity = true
      if (err instanceof RemoteNotFoundError) notFound++
      failures.push((err as Error).message)
    }
  }
  const summary = failures.length === 0 ? 'no gateway is configured: set [service] gateways' : failures.join('; ')
  if (integrity) throw new IntegrityError(`no gateway gave the bytes of ${cid}: ${summary}`)
  if (notFound > 0 && notFound === gateways.length) throw new ContentNotFoundError(`no gateway has ${cid} (each answered 404)`)
  throw new GatewayFetchError(`could not fetch ${cid}: ${summary}`)
}
