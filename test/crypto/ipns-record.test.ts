import { describe, expect, it } from 'vitest'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { createIPNSRecord, createIPNSRecordWithExpiration, marshalIPNSRecord, unmarshalIPNSRecord } from 'ipns'
import { base32 } from 'multiformats/bases/base32'
import { base36 } from 'multiformats/bases/base36'
import { base58btc } from 'multiformats/bases/base58'
import { ipfsCidOf, IPNS_RECORD_TYPE, parseIpnsName, verifyIpnsRecord } from '../../src/crypto/index.js'
import { IpnsRecordInvalidError } from '../../src/errors.js'

const VALUE = '/ipfs/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

async function keyAndName (): Promise<{ key: Awaited<ReturnType<typeof generateKeyPair>>, name: NonNullable<ReturnType<typeof parseIpnsName>> }> {
  const key = await generateKeyPair('Ed25519')
  const name = parseIpnsName(key.publicKey.toCID().toString(base36))
  if (name === undefined) throw new Error('a peer id did not parse as an IPNS name')
  return { key, name }
}

describe('IPNS names', () => {
  it('reads a name in base36, base32 or as a base58 peer id, and gives it as base36 (k51...)', async () => {
    const key = await generateKeyPair('Ed25519')
    const cid = key.publicKey.toCID()
    const k51 = cid.toString(base36)
    expect(k51.startsWith('k51')).toBe(true)
    for (const text of [k51, cid.toString(base32), base58btc.baseEncode(cid.multihash.bytes)]) {
      expect(parseIpnsName(text)?.text, text).toBe(k51)
    }
  })

  it('refuses what is not a name: a content CID, a DNS name, junk, something too long', () => {
    for (const text of ['bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', 'example.com', 'k51!', '', 'k'.repeat(200)]) {
      expect(parseIpnsName(text), text).toBeUndefined()
    }
  })
})

describe('IPNS records', () => {
  it('believes a record signed by the name\'s key, and says what it holds', async () => {
    const { key, name } = await keyAndName()
    const bytes = marshalIPNSRecord(await createIPNSRecord(key, VALUE, 7n, 60_000, { ttlNs: 30_000_000_000n }))
    const record = await verifyIpnsRecord(name, bytes)
    expect(record).toMatchObject({ value: VALUE, sequence: 7n, ttlSeconds: 30 })
    expect(record.validUntil).toBeGreaterThan(Date.now())
    expect(ipfsCidOf(record.value)?.toString()).toBe(VALUE.slice('/ipfs/'.length))
    expect(IPNS_RECORD_TYPE).toBe('application/vnd.ipfs.ipns-record')
  })

  it('refuses a record signed by another key, one altered after signing, an expired one, and one too large', async () => {
    const { key, name } = await keyAndName()
    const other = await generateKeyPair('Ed25519')
    const forged = marshalIPNSRecord(await createIPNSRecord(other, VALUE, 8n, 60_000))
    const good = await createIPNSRecord(key, VALUE, 8n, 60_000)
    // The same record with another value in its signed data's place: its V2 signature no longer holds.
    const altered = marshalIPNSRecord({ ...good, value: '/ipfs/bafkqaaa' })
    const expired = marshalIPNSRecord(await createIPNSRecordWithExpiration(key, VALUE, 9n, new Date(Date.now() - 1000).toISOString()))
    const large = new Uint8Array(11 * 1024)
    for (const [what, bytes] of [['forged', forged], ['altered', altered], ['expired', expired], ['large', large], ['empty', new Uint8Array(0)]] as const) {
      await expect(verifyIpnsRecord(name, bytes), what).rejects.toBeInstanceOf(IpnsRecordInvalidError)
    }
    // The forged one is valid for its own key's name: only the name it is given for refuses it.
    const otherName = parseIpnsName(other.publicKey.toCID().toString(base36))
    expect(otherName).toBeDefined()
    await expect(verifyIpnsRecord(otherName as NonNullable<typeof otherName>, forged)).resolves.toMatchObject({ sequence: 8n })
    expect(unmarshalIPNSRecord(forged).sequence).toBe(8n)
  })

  it('takes only /ipfs/<cid> as a value that names a CID', () => {
    expect(ipfsCidOf('/ipfs/bafkqaaa')?.toString()).toBe('bafkqaaa')
    for (const value of ['/ipfs/bafkqaaa/a.txt', '/ipns/k51qzi5uqu5d', '/ipfs/not-a-cid', 'bafkqaaa']) expect(ipfsCidOf(value), value).toBeUndefined()
  })
})
