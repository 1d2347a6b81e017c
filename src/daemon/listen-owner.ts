import { request } from 'undici'
import { formatListenAddress, type ListenAddress } from '../config/index.js'

/** Who holds a status address: another cidsync daemon, as its own `/status` says. */
export interface OtherDaemon { readonly pid: number, readonly stateDir: string, readonly version: string }

/**
 * Asks whatever listens at `address` for its `/status` (2 s at most): another cidsync daemon
 * answers with its pid and state dir; anything else (or nothing) answers undefined.
 */
export async function otherDaemonAt (address: ListenAddress): Promise<OtherDaemon | undefined> {
  if (address.kind !== 'tcp') return undefined
  try {
    const answer = await request(`http://${formatListenAddress(address)}/status`, { headersTimeout: 2_000, bodyTimeout: 2_000, signal: AbortSignal.timeout(2_000) })
    const text = await answer.body.text()
    if (answer.statusCode !== 200 || text.length > 4_000_000) return undefined
    const doc = JSON.parse(text) as Record<string, unknown>
    if (typeof doc.pid !== 'number' || typeof doc.stateDir !== 'string' || typeof doc.version !== 'string') return undefined
    return { pid: doc.pid, stateDir: doc.stateDir, version: doc.version }
  } catch {
    return undefined
  }
}
