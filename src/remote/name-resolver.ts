import { ipfsCidOf, IPNS_RECORD_TYPE, MAX_IPNS_RECORD_BYTES, parseIpnsName, verifyIpnsRecord, type VerifiedIpnsRecord } from '../crypto/index.js'
import { InvalidCidError, IpnsRecordInvalidError, NameResolveError } from '../errors.js'
import { readBounded } from './body.js'
import type { CallOptions } from './deals-client.js'
import type { HttpClient } from './http-client.js'

/** What an IPNS name points to, from the newest valid record any gateway gave. */
export interface ResolvedName extends VerifiedIpnsRecord {
  /** The CID the record's `/ipfs/<cid>` value names. */
  readonly cid: string
  /** The gateway that gave it. */
  readonly gateway: string
}

/**
 * Resolves a name through its signed record (`/ipns/<name>?format=ipns-record`), never through
 * what a gateway says it points to. Every gateway is asked: a record is believed only once it
 * is signed by the key the name is made from and unexpired, and the newest (highest sequence)
 * wins, so one gateway set back cannot move a name back.
 */
export async function resolveName (gateways: readonly HttpClient[], ipnsId: string, options: CallOptions = {}): Promise<ResolvedName> {
  const name = parseIpnsName(ipnsId)
  if (name === undefined) throw new InvalidCidError(ipnsId, 'IPNS name')
  const failures: string[] = []
  const forged: string[] = []
  let best: ResolvedName | undefined
  for (const gateway of gateways) {
    const origin = gateway.url({ path: '' }).origin
    try {
      const request = { method: 'GET' as const, path: `/ipns/${name.text}`, query: { format: 'ipns-record' }, headers: { accept: IPNS_RECORD_TYPE }, auth: false, signal: options.signal }
      const response = await gateway.send(request)
      const bytes = await readBounded(response.body, response.headers, gateway.context(request), MAX_IPNS_RECORD_BYTES)
      const record = await verifyIpnsRecord(name, bytes)
      const cid = ipfsCidOf(record.value)
      if (cid === undefined) throw new IpnsRecordInvalidError(name.text, `it points at ${JSON.stringify(record.value.slice(0, 100))}, not /ipfs/<cid>`)
      if (best === undefined || newer(record, best)) best = { ...record, cid: cid.toString(), gateway: origin }
    } catch (err) {
      options.signal?.throwIfAborted()
      if (err instanceof IpnsRecordInvalidError) forged.push(`${origin}: ${err.reason}`)
      else failures.push(`${origin}: ${(err as Error).message}`)
    }
  }
  if (best !== undefined) return best
  // A record that fails its check says more than a gateway that did not answer: it is what is shown.
  if (forged.length > 0) throw new IpnsRecordInvalidError(name.text, [...forged, ...failures].join('; '))
  throw new NameResolveError(`could not resolve ${name.text}: ${failures.join('; ') || 'no gateway is configured'}`)
}

/** The IPNS selector's order: a higher sequence, then a later end of validity. */
function newer (a: VerifiedIpnsRecord, b: VerifiedIpnsRecord): boolean {
  return a.sequence > b.sequence || (a.sequence === b.sequence && a.validUntil > b.validUntil)
}
