import { describe, expect, it } from 'vitest'
import { base32 } from 'multiformats/bases/base32'
import { base36 } from 'multiformats/bases/base36'
import { CID } from 'multiformats/cid'
import { localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { fetchBytes } from '../helpers/trustless.js'
import { checkedRecord, RECORD_TYPE, uploaded } from '../helpers/ipns.js'

const HOUR = 3_600_000

describe('the local service\'s IPNS records', () => {
  it('signs a record at each publish, served by the gateway and by delegated routing alike', async () => {
    const { clients, local } = await localServiceUnderTest()
    const dir = await useTempDir()
    const first = await uploaded(clients, dir, 'one.txt', 'first')
    const second = await uploaded(clients, dir, 'two.txt', 'second')
    const key = await clients.names.create()
    // A name is the key's peer id: a libp2p-key CIDv1 in base36.
    expect(key.ipnsId.startsWith('k51')).toBe(true)
    expect(CID.parse(key.ipnsId, base36).code).toBe(0x72)
    // A key never bound has no record.
    expect((await fetchBytes(local.url, `/routing/v1/ipns/${key.ipnsId}`)).status).toBe(404)
    expect((await fetchBytes(local.url, `/ipns/${key.ipnsId}?format=ipns-record`)).status).toBe(404)

    await clients.names.publish(key.ipnsName, first)
    const byFormat = await fetchBytes(local.url, `/ipns/${key.ipnsId}?format=ipns-record`)
    expect(byFormat.status).toBe(200)
    expect(byFormat.headers['content-type']).toBe(RECORD_TYPE)
    expect(byFormat.headers['cache-control']).toBe('public, max-age=60')
    const record = await checkedRecord(key.ipnsId, byFormat.body)
    expect(record).toMatchObject({ value: `/ipfs/${first}`, sequence: 0n, ttl: 60_000_000_000n })
    expect(Date.parse(record.validity.replace(/(\.\d{3})\d+/, '$1'))).toBeGreaterThan(Date.now() + 47 * HOUR)
    // The same bytes by Accept, by delegated routing, and under the name's base32 form.
    const asCid = CID.parse(key.ipnsId, base36).toString(base32)
    for (const [path, accept] of [[`/ipns/${key.ipnsId}`, RECORD_TYPE], [`/routing/v1/ipns/${key.ipnsId}`, RECORD_TYPE], [`/routing/v1/ipns/${asCid}`, undefined], [`/ipns/${asCid}?format=ipns-record`, undefined]]) {
      const answer = await fetchBytes(local.url, path as string, { headers: accept === undefined ? {} : { accept } })
      expect(answer.status, path).toBe(200)
      expect(answer.headers['content-type'], path).toBe(RECORD_TYPE)
      expect(answer.body.equals(byFormat.body), path).toBe(true)
    }
    const head = await fetchBytes(local.url, `/routing/v1/ipns/${key.ipnsId}`, { method: 'HEAD' })
    expect(head).toMatchObject({ status: 200, body: Buffer.alloc(0) })
    expect(head.headers.etag).toBe(byFormat.headers.etag)
    expect(head.headers['access-control-allow-origin']).toBe('*')
    expect((await fetchBytes(local.url, `/routing/v1/ipns/${key.ipnsId}`, { headers: { 'if-none-match': byFormat.headers.etag as string } })).status).toBe(304)

    // A publish moves the name: the next sequence, the new value; the gateway resolves through it.
    await clients.names.publish(key.ipnsName, second)
    const moved = await checkedRecord(key.ipnsId, (await fetchBytes(local.url, `/routing/v1/ipns/${key.ipnsId}`)).body)
    expect(moved).toMatchObject({ value: `/ipfs/${second}`, sequence: 1n })
    const content = await fetchBytes(local.url, `/ipns/${key.ipnsId}`)
    expect(content.body.toString()).toBe('second')
    expect(content.headers['cache-control']).toBe('public, max-age=60')
    expect(content.headers['last-modified']).toBeDefined()

    // A record is asked for by the name alone; a name must be one; the type must be the record's.
    expect((await fetchBytes(local.url, `/ipns/${key.ipnsId}/a.txt?format=ipns-record`)).status).toBe(400)
    expect((await fetchBytes(local.url, '/routing/v1/ipns/not-a-name')).status).toBe(400)
    expect((await fetchBytes(local.url, '/ipns/example.com')).status).toBe(400)
    expect((await fetchBytes(local.url, `/routing/v1/ipns/${key.ipnsId}`, { headers: { accept: 'application/json' } })).status).toBe(406)
    expect((await fetchBytes(local.url, `/ipfs/${first}?format=ipns-record`)).status).toBe(400)

    // A removed key's name has no record.
    await clients.names.remove(key.ipnsName)
    const gone = await fetchBytes(local.url, `/routing/v1/ipns/${key.ipnsId}`)
    expect(gone.status).toBe(404)
    expect(gone.headers['cache-control']).toBe('public, max-age=60')
  })

  it('signs a record again, with the next sequence, once it is past half its life', async () => {
    let now = Date.now()
    const { clients, local } = await localServiceUnderTest({ now: () => now })
    const dir = await useTempDir()
    const cid = await uploaded(clients, dir, 'one.txt', 'kept')
    const key = await clients.names.create()
    await clients.names.publish(key.ipnsName, cid)
    const recordAt = async (): Promise<Awaited<ReturnType<typeof checkedRecord>>> =>
      await checkedRecord(key.ipnsId, (await fetchBytes(local.url, `/routing/v1/ipns/${key.ipnsId}`)).body)
    const first = await recordAt()
    expect(first.sequence).toBe(0n)
    now += 23 * HOUR
    expect(await recordAt()).toEqual(first)
    now += 2 * HOUR
    const renewed = await recordAt()
    expect(renewed).toMatchObject({ value: `/ipfs/${cid}`, sequence: 1n })
    expect(Date.parse(renewed.validity.replace(/(\.\d{3})\d+/, '$1'))).toBeGreaterThan(Date.parse(first.validity.replace(/(\.\d{3})\d+/, '$1')))
    expect(await recordAt()).toEqual(renewed)
    // The next publish goes on from the renewed record's sequence.
    await clients.names.publish(key.ipnsName, cid)
    expect((await recordAt()).sequence).toBe(2n)
  })
})
