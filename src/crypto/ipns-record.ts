import { multihashToIPNSRoutingKey, unmarshalIPNSRecord } from 'ipns'
import { ipnsValidator } from 'ipns/validator'
import { base32 } from 'multiformats/bases/base32'
import { base36 } from 'multiformats/bases/base36'
import { base58btc } from 'multiformats/bases/base58'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import type { MultihashDigest } from 'multiformats/hashes/interface'
import { IpnsRecordInvalidError } from '../errors.js'

/**
 * IPNS names and signed records (the IPNS record spec), checked the same way by the local service
 * (before it stores a record it is given) and by cidsync's client (before it believes a name).
 */

/** The media type of a signed IPNS record: gateways and delegated routing answer with it. */
export const IPNS_RECORD_TYPE = 'application/vnd.ipfs.ipns-record'

/** The largest record the IPNS spec lets anyone accept. */
export const MAX_IPNS_RECORD_BYTES = 10 * 1024

const LIBP2P_KEY = 0x72
const IDENTITY = 0x00
const SHA2_256 = 0x12
const NAME_BASES = base36.decoder.or(base32.decoder).or(base58btc.decoder)

/** An IPNS name: its canonical text (a libp2p-key CIDv1 in base36, `k51...`) and the key to check records with. */
export interface IpnsName {
  readonly text: string
  readonly routingKey: Uint8Array
}

/**
 * An IPNS name as sent: a libp2p-key CIDv1 in base36 (`k51...`) or base32 (`bafz...`), or a peer
 * id in base58 (`12D3Koo...`, `Qm...`). Undefined for anything else.
 */
export function parseIpnsName (text: string): IpnsName | undefined {
  if (text.length === 0 || text.length > 128 || !/^[A-Za-z0-9]+$/.test(text)) return undefined
  let digest: MultihashDigest
  try {
    if (text.startsWith('1') || text.startsWith('Qm')) digest = Digest.decode(base58btc.baseDecode(text))
    else {
      const cid = CID.parse(text, NAME_BASES)
      if (cid.version !== 1 || cid.code !== LIBP2P_KEY) return undefined
      digest = cid.multihash
    }
  } catch {
    return undefined
  }
  if (!isKeyDigest(digest)) return undefined
  return { text: CID.createV1(LIBP2P_KEY, digest).toString(base36), routingKey: multihashToIPNSRoutingKey(digest) }
}

/** A key inlined (identity) or hashed (sha2-256): the two ways a peer id holds its key. */
function isKeyDigest (digest: MultihashDigest): digest is MultihashDigest<typeof IDENTITY | typeof SHA2_256> {
  return digest.code === IDENTITY || digest.code === SHA2_256
}

/** What a record says, once its signature, its key and its validity were checked. */
export interface VerifiedIpnsRecord {
  /** The path it points to, as signed: `/ipfs/<cid>` for every name cidsync publishes. */
  readonly value: string
  readonly sequence: bigint
  /** When it stops being valid (ms). */
  readonly validUntil: number
  /** How long a resolver may cache it, in seconds (0 when it says none). */
  readonly ttlSeconds: number
  /** The record as signed, to store or pass on. */
  readonly bytes: Uint8Array
}

/** An RFC 3339 time with nanoseconds, as IPNS records carry it, in ms (NaN when malformed). */
export function parseValidity (text: string): number {
  return Date.parse(text.replace(/(\.\d{3})\d+/, '$1'))
}

/**
 * Checks a record for a name as every IPNS client does: no larger than the spec allows, signed
 * (V2) by the key the name is made from, not expired. Throws {@link IpnsRecordInvalidError}.
 */
export async function verifyIpnsRecord (name: IpnsName, bytes: Uint8Array): Promise<VerifiedIpnsRecord> {
  try {
    await ipnsValidator(name.routingKey, bytes)
    const record = unmarshalIPNSRecord(bytes)
    const validUntil = parseValidity(record.validity)
    if (Number.isNaN(validUntil)) throw new IpnsRecordInvalidError(name.text, `its validity ${JSON.stringify(record.validity.slice(0, 40))} is not a time`)
    const ttlSeconds = Number((record.ttl ?? 0n) / 1_000_000_000n)
    return { value: record.value, sequence: record.sequence, validUntil, ttlSeconds, bytes }
  } catch (err) {
    if (err instanceof IpnsRecordInvalidError) throw err
    throw new IpnsRecordInvalidError(name.text, (err as Error).message.slice(0, 200), { cause: err })
  }
}

/** The CID a record's value names, when it is `/ipfs/<cid>` (with no path); undefined otherwise. */
export function ipfsCidOf (value: string): CID | undefined {
  const m = /^\/ipfs\/([A-Za-z0-9]{1,200})$/.exec(value)
  if (m === null) return undefined
  try {
    return CID.parse(m[1] as string)
  } catch {
    return undefined
  }
}
