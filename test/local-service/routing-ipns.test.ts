import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { createIPNSRecord, marshalIPNSRecord } from 'ipns'
import { base36 } from 'multiformats/bases/base36'
import { localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { fetchBytes } from '../helpers/trustless.js'
import { checkedRecord, RECORD_TYPE, uploaded } from '../helpers/ipns.js'

async function put (url: string, name: string, body: Uint8Array, type = RECORD_TYPE): Promise<{ status: number, text: string }> {
  const answer = await fetch(`${url}/routing/v1/ipns/${name}`, { method: 'PUT', headers: { 'content-type': type }, body, signal: AbortSignal.timeout(30_000) })
  return { status: answer.status, text: await answer.text() }
}

describe('delegated routing\'s PUT /routing/v1/ipns/{name}', () => {
  it('refuses a forged, replayed, foreign, mistyped or oversized record, and takes back a newer one it lost', async () => {
    const dir = await useTempDir()
    const { clients, local } = await localServiceUnderTest({ dir: join(dir, 'service') })
    const first = await uploaded(clients, dir, 'one.txt', 'first')
    const second = await uploaded(clients, dir, 'two.txt', 'second')
    const key = await clients.names.create()
    const recordOf = async (): Promise<Buffer> => (await fetchBytes(local.url, `/routing/v1/ipns/${key.ipnsId}`)).body
    await clients.names.publish(key.ipnsName, first)
    const older = await recordOf()
    await clients.names.publish(key.ipnsName, second)
    const newer = await recordOf()
    expect((await checkedRecord(key.ipnsId, newer)).sequence).toBe(1n)

    // The record held, sent again: nothing to do.
    expect(await put(local.url, key.ipnsId, newer)).toMatchObject({ status: 200 })
    // A replay of the older record, validly signed but a lower sequence.
    const replayed = await put(local.url, key.ipnsId, older)
    expect(replayed.status).toBe(409)
    expect(replayed.text).toContain('sequence 0')
    // A record for this name signed by another key, with a higher sequence.
    const other = await generateKeyPair('Ed25519')
    const forged = marshalIPNSRecord(await createIPNSRecord(other, `/ipfs/${first}`, 99n, 60_000))
    const refused = await put(local.url, key.ipnsId, forged)
    expect(refused.status).toBe(400)
    expect(refused.text).toContain('not valid')
    // A valid record of a name whose key this service does not hold: not kept here.
    expect((await put(local.url, other.publicKey.toCID().toString(base36), forged)).status).toBe(403)
    expect((await put(local.url, key.ipnsId, newer, 'application/octet-stream')).status).toBe(406)
    expect((await put(local.url, key.ipnsId, new Uint8Array(11 * 1024))).status).toBe(413)
    expect((await put(local.url, 'not-a-name', newer)).status).toBe(400)
    // Nothing refused moved the name.
    expect((await recordOf()).equals(newer)).toBe(true)
    expect((await fetchBytes(local.url, `/ipns/${key.ipnsId}`)).body.toString()).toBe('second')

    // The service set back (its data restored from an older backup): the newer record, sent back, is taken.
    const db = new Database(join(dir, 'service', 'service.sqlite'))
    try {
      db.pragma('busy_timeout = 5000')
      db.prepare('UPDATE ipns_keys SET record = ?, sequence = 0, cid = ? WHERE ipns_id = ?').run(older, first, key.ipnsId)
    } finally {
      db.close()
    }
    expect((await fetchBytes(local.url, `/ipns/${key.ipnsId}`)).body.toString()).toBe('first')
    expect(await put(local.url, key.ipnsId, newer)).toMatchObject({ status: 200 })
    expect((await recordOf()).equals(newer)).toBe(true)
    expect((await fetchBytes(local.url, `/ipns/${key.ipnsId}`)).body.toString()).toBe('second')
    expect((await clients.names.list()).find(k => k.ipnsName === key.ipnsName)?.cid).toBe(second)
    // And the next publish goes on above it.
    await clients.names.publish(key.ipnsName, first)
    expect((await checkedRecord(key.ipnsId, await recordOf())).sequence).toBe(2n)
  })
})
