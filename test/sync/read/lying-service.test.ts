import { describe, it, expect, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import pino from 'pino'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { createServiceClients, type ServiceClients } from '../../../src/remote/index.js'
import { publish, readPublish, restore, verify, walkEntries, SNAPSHOT_PROFILE, SyncStore } from '../../../src/sync/index.js'
import { MAGIC, keyIdOf, parseManifest, writingKey } from '../../../src/snapshot/index.js'
import { InvalidCidError, RemoteResponseError, SnapshotFormatError, SnapshotIntegrityError } from '../../../src/errors.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { ScriptedServer } from '../../helpers/scripted-server.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { restoring, syncDevice, writeRows as write, syncOf } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })
const A = 'aaaaaaaa-0000-4000-8000-000000000000'

async function someCid (text: string): Promise<string> {
  return CID.createV1(0x55, await sha256.digest(new TextEncoder().encode(text))).toString()
}

/** The pointer service and gateway are the scripted server; uploads (when given) go to a real local service. */
function scriptedClients (server: ScriptedServer, upload?: { url: string, apiKey: string, sessionToken: string }): ServiceClients {
  const clients = createServiceClients(
    { dealUrl: upload?.url ?? server.url, apiUrl: upload?.url ?? server.url, pointerUrl: server.url, uploadUrl: upload?.url ?? server.url, gateways: [server.url] },
    { apiKey: () => upload?.apiKey ?? 'key', sessionToken: () => upload?.sessionToken ?? 'token' },
    { retry: { baseDelayMs: 1, maxDelayMs: 2, attempts: 1 } }
  )
  onTestFinished(async () => { await clients.close() })
  return clients
}

async function filesUnder (dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String).sort()
}

describe.skipIf(EXTERNAL)('a CID from the service is never used as a path', () => {
  it('a pointer naming `<cid>/../../../../zzz` is refused at the edge: no fetch outside /ipfs/<cid>, no file outside the state dir, a coded error', async () => {
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'lying' })
    write(a, 'x.md')
    const evil = `${await someCid('x')}/../../../../zzz`
    const server = await new ScriptedServer().answer({ status: 200, body: { pointer: { snapshotCid: evil, engine: 'cidsync-sqlite/2', namespace: 'lying', network: 'mainnet' } } }).listen()
    const real = await serviceUnderTest()
    const local = real.local as NonNullable<typeof real.local>
    const clients = scriptedClients(server, { url: local.url, apiKey: real.apiKey, sessionToken: local.issueToken(real.address) })
    const before = await filesUnder(root)
    const store = { get: () => undefined, put: () => {} }

    await expect(clients.pointers.current('lying', 'mainnet')).rejects.toMatchObject({ code: 'ERR_REMOTE_RESPONSE' })
    await expect(restore(restoring(clients, a.config), { namespace: 'lying', network: 'mainnet', dryRun: true })).rejects.toThrow(RemoteResponseError)
    // A publish reaches its pointer step (segments uploaded to the real service), and stops there.
    await expect(publish(syncOf(a, clients, logger), { signal: AbortSignal.timeout(60_000) })).rejects.toThrow(RemoteResponseError)

    // Whoever parsed it before (a cache, a caller): the path and URL builders refuse it too.
    const fetch = { stateDir: a.config.stateDir, dir: join(a.config.stateDir, 'snapshots'), label: 'read' }
    await expect(readPublish(clients, evil, store, fetch)).rejects.toThrow(InvalidCidError)
    await expect(async () => { for await (const entry of walkEntries(clients, evil, store, fetch)) expect(entry).toBeUndefined() }).rejects.toThrow(InvalidCidError)
    await expect(verify({ ...syncOf(a, clients, logger) }, { cid: evil, cache: store, stateDir: a.config.stateDir })).rejects.toThrow(InvalidCidError)
    await expect(clients.objects.getFile(evil, { name: 'x' } as never, join(a.config.stateDir, 'x'))).rejects.toThrow(InvalidCidError)

    expect(server.received.length).toBeGreaterThanOrEqual(3)
    expect(server.received.filter(r => !r.url.startsWith('/v1/pointers/current?'))).toEqual([])
    expect(server.received.some(r => r.url.includes('zzz'))).toBe(false)
    // Nothing appeared beside the state dir, and nothing named zzz anywhere.
    const after = await filesUnder(root)
    expect(after.filter(f => f.includes('zzz'))).toEqual([])
    expect(after.filter(f => !before.includes(f) && !f.startsWith(join('a', 'state')))).toEqual([])
    // Where `snapshots/../../../../zzz` would land: beside the test's directory.
    expect((await readdir(dirname(root))).filter(name => name.startsWith('zzz'))).toEqual([])
  })

  it('a manifest naming a segment or a previous publish that is not a canonical CID is refused', async () => {
    const cid = await someCid('seg')
    const manifest = {
      version: 2, createdAt: new Date().toISOString(), device: A, hostname: 'h', previous: null, entries: 1,
      devices: [{ deviceId: A, hostname: 'h', firstSeen: 1, lastSeq: 1, segments: [{ cid, kind: 'base', from: 0, to: 1, entries: 1, bytes: 10 }] }],
      added: [cid], bytesAdded: 10
    }
    expect(parseManifest(JSON.stringify(manifest), 'm').devices).toHaveLength(1)
    const evilSegment = structuredClone(manifest)
    ;(evilSegment.devices[0] as { segments: Array<{ cid: string }> }).segments[0]!.cid = `${cid}/../../x`
    expect(() => parseManifest(JSON.stringify(evilSegment), 'm')).toThrow(SnapshotFormatError)
    expect(() => parseManifest(JSON.stringify({ ...manifest, previous: '../../etc' }), 'm')).toThrow(SnapshotFormatError)
    expect(() => parseManifest(JSON.stringify({ ...manifest, previous: cid.toUpperCase() }), 'm')).toThrow(/expected a CID/)
  })
})

describe.skipIf(EXTERNAL)('history shows only what was authenticated', () => {
  it('a forged /1 header (never decrypted) is not listed, nor offered by restore --at', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'forged-history' })
    write(a, 'x.md')
    const first = await publish(syncOf(a, clients, logger))
    expect(first.skipped).toBe(false)
    // Someone who can write the pointer but has no key: this device's key id, a header, noise.
    const key = writingKey(a.config.stateDir)
    expect(keyIdOf(key.key)).toBe(key.keyId)
    const header = Buffer.from(JSON.stringify({ format: 1, engine: 'cidsync-sqlite/1', compression: 'gzip', cipher: 'aes-256-gcm', nonce: randomBytes(12).toString('base64'), keyId: key.keyId, salt: '', createdAt: '2000-01-01T00:00:00.000Z', device: 'FORGED-DEVICE-0000', entries: 999_999_999 }))
    const length = Buffer.alloc(2)
    length.writeUInt16BE(header.byteLength)
    const file = join(root, 'forged.snap')
    await writeFile(file, Buffer.concat([MAGIC, length, header, randomBytes(200)]))
    const { cid } = await clients.objects.put(file, SNAPSHOT_PROFILE)
    await clients.pointers.put({ snapshotCid: cid, engine: 'cidsync-sqlite/1', namespace: 'forged-history', network: 'mainnet' })

    const store = new SyncStore(a.config.stateDir)
    onTestFinished(() => { store.close() })
    const fetch = { stateDir: a.config.stateDir, dir: join(a.config.stateDir, 'snapshots'), label: 'history' }
    const shown: string[] = []
    await expect(async () => { for await (const entry of walkEntries(clients, cid, store.manifestCache, fetch)) shown.push(entry.device) }).rejects.toThrow(SnapshotIntegrityError)
    expect(shown).toEqual([])
    expect(store.manifestCache.get(cid)).toBeUndefined()
    await expect(restore(restoring(clients, a.config), { namespace: 'forged-history', network: 'mainnet', at: new Date('2001-01-01'), dryRun: true })).rejects.toThrow(SnapshotIntegrityError)
    // A row cached from the header alone (an older cidsync) is read again, not believed.
    store.manifestCache.put(cid, JSON.stringify({ kind: 'v1', entry: { cid, engine: 'cidsync-sqlite/1', at: '2000-01-01T00:00:00.000Z', device: 'FORGED-DEVICE-0000', hostname: '', entries: 999_999_999, bytesAdded: 1, previous: null } }))
    await expect(async () => { for await (const entry of walkEntries(clients, cid, store.manifestCache, fetch)) shown.push(entry.device) }).rejects.toThrow(SnapshotIntegrityError)
    expect(shown).toEqual([])
  })
})
