import { describe, expect, it, onTestFinished } from 'vitest'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { chmod } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { base36 } from 'multiformats/bases/base36'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { identity } from 'multiformats/hashes/identity'
import { startLocalService } from '../../src/local-service/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { checkedRecord } from '../helpers/ipns.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { fetchBytes } from '../helpers/trustless.js'

/** The service's schema before IPNS records (its first three steps, as released). */
const SCHEMA_BEFORE_RECORDS = `CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
  CREATE TABLE auth_messages (nonce TEXT PRIMARY KEY, address TEXT NOT NULL, message TEXT NOT NULL, expires_at INTEGER NOT NULL, used INTEGER NOT NULL DEFAULT 0) STRICT;
  CREATE TABLE api_keys (key TEXT PRIMARY KEY, address TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT;
  CREATE TABLE files (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, address TEXT NOT NULL, cid TEXT NOT NULL, file_name TEXT NOT NULL,
    mime_type TEXT NOT NULL, size INTEGER NOT NULL, sent_for_deal TEXT NOT NULL DEFAULT '', encryption INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL, last_update INTEGER NOT NULL) STRICT;
  CREATE INDEX files_by_owner ON files (address, seq);
  CREATE TABLE deals (address TEXT NOT NULL, cid TEXT NOT NULL, requested_at INTEGER NOT NULL, active_at INTEGER NOT NULL,
    deal_id INTEGER NOT NULL, miner TEXT NOT NULL, PRIMARY KEY (address, cid)) STRICT;
  CREATE TABLE ipns_keys (ipns_name TEXT PRIMARY KEY, ipns_id TEXT NOT NULL UNIQUE, address TEXT NOT NULL, private_key BLOB NOT NULL,
    cid TEXT NOT NULL DEFAULT '', last_update INTEGER NOT NULL) STRICT;
  CREATE TABLE pointers (user_id TEXT NOT NULL, namespace TEXT NOT NULL, network TEXT NOT NULL, snapshot_cid TEXT NOT NULL,
    engine TEXT NOT NULL, memories INTEGER, updated_at TEXT NOT NULL, PRIMARY KEY (user_id, namespace, network)) STRICT;
  CREATE TABLE packs (id INTEGER PRIMARY KEY, created_at INTEGER NOT NULL) STRICT;
  CREATE TABLE blocks (cid BLOB PRIMARY KEY, pack INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL) STRICT, WITHOUT ROWID;
  CREATE TABLE invitations (code_hash TEXT PRIMARY KEY, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
    used_by TEXT, used_at INTEGER) STRICT;`

/** A key as versions before signed records made one: PKCS#8 DER, its id from the protobuf key by hand. */
function keyOfOlderVersion (): { ipnsName: string, ipnsId: string, privateKey: Buffer } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  const encoded = Buffer.concat([Buffer.from([0x08, 0x01, 0x12, 0x20]), publicKey.export({ format: 'der', type: 'spki' }).subarray(-32)])
  const ipnsId = CID.createV1(0x72, identity.digest(encoded)).toString(base36)
  return { ipnsName: randomBytes(16).toString('hex'), ipnsId, privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }) }
}

/** A CID whose bytes are in it (identity): every gateway holds it. */
const inline = (text: string): string => CID.createV1(raw.code, identity.digest(Buffer.from(text))).toString()

describe('IPNS keys kept by older versions', () => {
  it('keep their names: a name bound before records existed resolves through a signed record, and publishes on', async () => {
    const dir = await useTempDir()
    const address = `0x${randomBytes(20).toString('hex')}`
    const bound = keyOfOlderVersion()
    const unbound = keyOfOlderVersion()
    const boundAt = Date.parse('2025-03-01T10:00:00Z')
    const old = new Database(join(dir, 'service.sqlite'))
    old.exec(SCHEMA_BEFORE_RECORDS)
    old.pragma('user_version = 3')
    old.prepare('INSERT INTO api_keys (key, address, created_at) VALUES (?, ?, ?)').run('older-api-key', address, boundAt)
    const insert = old.prepare('INSERT INTO ipns_keys (ipns_name, ipns_id, address, private_key, cid, last_update) VALUES (?, ?, ?, ?, ?, ?)')
    insert.run(bound.ipnsName, bound.ipnsId, address, bound.privateKey, inline('bound long ago'), boundAt)
    insert.run(unbound.ipnsName, unbound.ipnsId, address, unbound.privateKey, '', boundAt)
    old.close()
    await chmod(dir, 0o700)

    const service = await startLocalService({ dir })
    onTestFinished(async () => { await service.stop() })
    const url = service.url
    const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => 'older-api-key', sessionToken: () => undefined })
    onTestFinished(async () => { await clients.close() })

    const answer = await fetchBytes(url, `/routing/v1/ipns/${bound.ipnsId}`)
    expect(answer.status).toBe(200)
    expect(await checkedRecord(bound.ipnsId, answer.body)).toMatchObject({ value: `/ipfs/${inline('bound long ago')}`, sequence: 0n })
    const content = await fetchBytes(url, `/ipns/${bound.ipnsId}`)
    expect(content.body.toString()).toBe('bound long ago')
    expect(content.headers['last-modified']).toBe(new Date(boundAt).toUTCString())
    expect(await clients.gateway.fetchName(bound.ipnsId)).toEqual(Buffer.from('bound long ago'))

    // A key never bound has no record until its first publish; both publish on, keeping their names.
    expect((await fetchBytes(url, `/routing/v1/ipns/${unbound.ipnsId}`)).status).toBe(404)
    expect((await clients.names.publish(unbound.ipnsName, inline('first bound now'))).ipnsId).toBe(unbound.ipnsId)
    expect((await clients.names.publish(bound.ipnsName, inline('bound again'))).ipnsId).toBe(bound.ipnsId)
    expect(await checkedRecord(unbound.ipnsId, (await fetchBytes(url, `/routing/v1/ipns/${unbound.ipnsId}`)).body)).toMatchObject({ value: `/ipfs/${inline('first bound now')}`, sequence: 0n })
    expect(await checkedRecord(bound.ipnsId, (await fetchBytes(url, `/routing/v1/ipns/${bound.ipnsId}`)).body)).toMatchObject({ value: `/ipfs/${inline('bound again')}`, sequence: 1n })
    expect((await clients.names.list()).map(k => k.ipnsId).sort()).toEqual([bound.ipnsId, unbound.ipnsId].sort())
  })
})
