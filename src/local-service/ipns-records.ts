import type Database from 'better-sqlite3'
import { createIPNSRecordWithExpiration, marshalIPNSRecord, unmarshalIPNSRecord } from 'ipns'
import { IpnsRecordInvalidError } from '../errors.js'
import { ipfsCidOf, parseValidity, verifyIpnsRecord, type IpnsName } from '../crypto/index.js'
import { HttpFailure } from './http.js'
import { signingKey } from './ipns-key.js'

/** How long a record this service signs stays valid: a client refuses it after that. */
export const IPNS_LIFETIME_MS = 48 * 3_600_000

/** A record with less than this left is signed again, with the next sequence, when it is asked for. */
export const IPNS_RENEW_WITHIN_MS = IPNS_LIFETIME_MS / 2

/**
 * The TTL every record carries: how long a resolver may cache it. Its owner moves a name at every
 * publish, so a short one, a minute.
 */
export const IPNS_TTL_SECONDS = 60

/** How often a write that lost a race with another is tried again. */
const TRIES = 5

/** The current record of a name held here, as the gateway and delegated routing answer it. */
export interface ServedRecord {
  readonly bytes: Uint8Array
  readonly value: string
  readonly sequence: bigint
  readonly validUntil: number
  readonly ttlSeconds: number
  /** When the name was last bound (ms): `Last-Modified`. */
  readonly lastUpdate: number
}

interface Row {
  ipns_name: string
  ipns_id: string
  private_key: Buffer
  cid: string
  last_update: number
  record: Buffer | null
  sequence: number | null
}

/**
 * The signed IPNS records of the names whose keys this service holds: one current record a name,
 * with its sequence. Every write is made only if the sequence is still the one read (a publish,
 * a renewal and a record given from outside may race), so a sequence never goes back.
 */
export class IpnsRecords {
  private readonly byName: Database.Statement
  private readonly byId: Database.Statement
  private readonly store: Database.Statement

  constructor (db: Database.Database, private readonly now: () => number) {
    this.byName = db.prepare('SELECT * FROM ipns_keys WHERE ipns_name = ? AND address = ?')
    this.byId = db.prepare('SELECT * FROM ipns_keys WHERE ipns_id = ?')
    this.store = db.prepare('UPDATE ipns_keys SET record = ?, sequence = ?, cid = ?, last_update = ? WHERE ipns_name = ? AND sequence IS ?')
  }

  /** Binds a key to a CID: a new record signed with the next sequence. Undefined when the account has no such key. */
  async publish (keyName: string, address: string, cid: string): Promise<{ ipnsId: string } | undefined> {
    for (let i = 0; i < TRIES; i++) {
      const row = this.byName.get(keyName, address) as Row | undefined
      if (row === undefined) return undefined
      const bytes = await this.sign(row, `/ipfs/${cid}`)
      if (this.write(row, bytes, cid, this.now())) return { ipnsId: row.ipns_id }
    }
    throw busy()
  }

  /**
   * The current record of a name held here; undefined when none is (an unknown name, or a key
   * never bound). A record past half its life, or a name bound by a version that signed none, is
   * signed again first.
   */
  async current (name: IpnsName): Promise<ServedRecord | undefined> {
    for (let i = 0; i < TRIES; i++) {
      const row = this.byId.get(name.text) as Row | undefined
      if (row === undefined || (row.record === null && row.cid === '')) return undefined
      const held = row.record === null ? undefined : served(row, row.record)
      if (held !== undefined && held.validUntil - this.now() > IPNS_RENEW_WITHIN_MS) return held
      const bytes = await this.sign(row, held?.value ?? `/ipfs/${row.cid}`)
      if (this.write(row, bytes, row.cid, row.last_update)) return served(row, bytes)
    }
    throw busy()
  }

  /**
   * A record given from outside (delegated routing's PUT), for a name held here: stored when it
   * is valid and newer than the one held. Refused (an {@link HttpFailure}) otherwise.
   */
  async accept (name: IpnsName, bytes: Uint8Array): Promise<void> {
    const given = await verifyIpnsRecord(name, bytes).catch((err: unknown) => {
      throw err instanceof IpnsRecordInvalidError ? new HttpFailure(400, err.message) : err
    })
    const cid = ipfsCidOf(given.value)
    if (cid === undefined) throw new HttpFailure(400, `the record points at ${JSON.stringify(given.value.slice(0, 100))}: this service keeps records that point at /ipfs/<cid>`)
    if (given.sequence > BigInt(Number.MAX_SAFE_INTEGER)) throw new HttpFailure(400, `the record's sequence ${given.sequence} is larger than this service keeps`)
    for (let i = 0; i < TRIES; i++) {
      const row = this.byId.get(name.text) as Row | undefined
      if (row === undefined) throw new HttpFailure(403, `this service keeps records only for the names whose keys it holds, not ${name.text}`)
      const held = row.record === null ? undefined : served(row, row.record)
      if (held !== undefined) {
        if (Buffer.from(held.bytes).equals(Buffer.from(bytes))) return
        const older = given.sequence < held.sequence || (given.sequence === held.sequence && given.validUntil <= held.validUntil)
        if (older) throw new HttpFailure(409, `the record's sequence ${given.sequence} is not newer than the ${held.sequence} held here: a replayed record is refused`)
      }
      if (this.write(row, bytes, cid.toString(), this.now())) return
    }
    throw busy()
  }

  /** The name's record for `value`, with the sequence after the one held (0 for its first). */
  private async sign (row: Row, value: string): Promise<Uint8Array> {
    const sequence = row.sequence === null ? 0n : BigInt(row.sequence) + 1n
    const expires = new Date(this.now() + IPNS_LIFETIME_MS).toISOString()
    const record = await createIPNSRecordWithExpiration(signingKey(row.private_key), value, sequence, expires, { v1Compatible: true, ttlNs: BigInt(IPNS_TTL_SECONDS) * 1_000_000_000n })
    return marshalIPNSRecord(record)
  }

  /** Stores `bytes` as the name's record, only if its sequence is still the one `row` read. */
  private write (row: Row, bytes: Uint8Array, cid: string, lastUpdate: number): boolean {
    const sequence = Number(unmarshalIPNSRecord(bytes).sequence)
    return this.store.run(Buffer.from(bytes), sequence, cid, lastUpdate, row.ipns_name, row.sequence).changes === 1
  }
}

function served (row: Row, bytes: Uint8Array): ServedRecord {
  const record = unmarshalIPNSRecord(bytes)
  const ttlSeconds = Number((record.ttl ?? 0n) / 1_000_000_000n)
  return { bytes, value: record.value, sequence: record.sequence, validUntil: parseValidity(record.validity), ttlSeconds, lastUpdate: row.last_update }
}

function busy (): HttpFailure {
  return new HttpFailure(503, 'the name changed while this request was writing it: try again', { 'retry-after': '1' })
}
