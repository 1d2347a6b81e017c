import { describe, it, expect, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { publish, restore, SNAPSHOT_PROFILE, SyncStore, type SyncService } from '../../../src/sync/index.js'
import { publishStatus } from '../../../src/sync/status.js'
import { exportKey, importKey, MAX_SEQUENCE, parseManifest, sealManifest, type Manifest } from '../../../src/snapshot/index.js'
import { indexPath, openIndex } from '../../../src/index/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { restoring, syncDevice, syncOf, writeRows as write, type SyncDevice } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })
const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const C = 'cccccccc-0000-4000-8000-000000000000'
const F = 'ffffffff-0000-4000-8000-000000000000'

const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}.md`)
const components = (d: SyncDevice, clients: SyncService): Parameters<typeof publish>[0] => syncOf(d, clients, logger)

function storeOf (d: SyncDevice): SyncStore {
  const store = new SyncStore(d.config.stateDir)
  onTestFinished(() => { store.close() })
  return store
}

const idle = { running: false, pendingAt: undefined, retryAt: undefined, lastError: null, runs: 0, failures: 0, blocked: null, held: null, pointerProblem: null, durationsSeconds: { count: 0, sum: 0, buckets: [] } } as never

describe.skipIf(EXTERNAL)('a pointer set back by the service', () => {
  it('is noticed (status and log), and published on top of: a new device restores every row', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'rollback' })
    const b = await syncDevice(root, 'b', B, { namespace: 'rollback' })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    write(a, ...names('first', 60))
    const first = await publish(components(a, clients))
    write(a, ...names('later', 40))
    await publish(components(a, clients))
    write(b, ...names('b', 30))
    const latest = await publish(components(b, clients))
    expect(latest.entries).toBe(130)
    expect(await publish(components(a, clients))).toMatchObject({ skipped: true, merged: 1 })

    // The lying service: back to the first publish.
    await clients.pointers.put({ snapshotCid: first.cid, engine: 'cidsync-sqlite/2', namespace: 'rollback', network: 'mainnet', memories: 60 })
    const again = await publish(components(a, clients))
    expect(again).toMatchObject({ skipped: false, entries: 130 })
    const pointer = await clients.pointers.current('rollback', 'mainnet')
    expect(pointer.snapshotCid).toBe(again.cid)
    const status = publishStatus(storeOf(a), a.index.changeMarker(), idle)
    expect(status.rolledBack?.code).toBe('ERR_POINTER_ROLLED_BACK')
    expect(status.rolledBack?.message).toMatch(new RegExp(`the pointer holds ${first.cid}, which lacks what it held before`))
    expect(status.pointer.inSync).toBe(true)

    // Rolled back again: the other device notices too (it holds more of A than the pointer does).
    await clients.pointers.put({ snapshotCid: first.cid, engine: 'cidsync-sqlite/2', namespace: 'rollback', network: 'mainnet', memories: 60 })
    expect(await publish(components(b, clients))).toMatchObject({ skipped: false, entries: 130 })
    expect(publishStatus(storeOf(b), b.index.changeMarker(), idle).rolledBack?.code).toBe('ERR_POINTER_ROLLED_BACK')

    const c = await syncDevice(root, 'c', C, { namespace: 'rollback' })
    importKey(c.config.stateDir, exportKey(a.config.stateDir))
    c.index.close()
    await restore(restoring(clients, c.config), { namespace: 'rollback', network: 'mainnet', force: true })
    const restored = openIndex(indexPath(c.config.stateDir), { readonly: true })
    try {
      expect(restored.entries.list({}).length).toBe(130)
    } finally {
      restored.close()
    }
  })
})

describe.skipIf(EXTERNAL)('a sequence far past what a device wrote', () => {
  it('is refused with a coded error in status, the rest merged, and publishing goes on', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'far-seq' })
    const b = await syncDevice(root, 'b', B, { namespace: 'far-seq' })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    write(a, 'a.md')
    await publish(components(a, clients))
    write(b, ...names('b', 5))
    const theirs = await publish(components(b, clients))

    // A holder of the key forges a publish on top: A at 2^48, and a device F at 2^40 never seen before.
    const cached = JSON.parse(storeOf(b).manifestCache.get(theirs.cid) as string) as { manifest: Manifest }
    const forged = structuredClone(cached.manifest)
    const chainOfA = forged.devices.find(d => d.deviceId === A)
    if (chainOfA === undefined) throw new Error('no chain of A')
    chainOfA.lastSeq = MAX_SEQUENCE
    ;(chainOfA.segments.at(-1) as { to: number }).to = MAX_SEQUENCE
    const fake = CID.createV1(0x55, await sha256.digest(new TextEncoder().encode('never'))).toString()
    forged.devices.push({ deviceId: F, hostname: 'forger', firstSeen: 1, lastSeq: 2 ** 40, segments: [{ cid: fake, kind: 'base', from: 0, to: 2 ** 40, entries: 1, bytes: 100 }] })
    forged.previous = theirs.cid
    parseManifest(JSON.stringify(forged), 'forged')
    const sealed = await sealManifest({ path: join(root, 'forged.manifest'), manifest: forged, encryption: 'aes-256-gcm', stateDir: b.config.stateDir })
    const { cid } = await clients.objects.put(sealed.path, SNAPSHOT_PROFILE)
    await clients.pointers.put({ snapshotCid: cid, engine: 'cidsync-sqlite/2', namespace: 'far-seq', network: 'mainnet' })

    // A restore into this state dir does not install it either.
    await writeFile(join(a.config.stateDir, 'device-id'), `${A}\n`)
    await expect(restore(restoring(clients, a.config), { namespace: 'far-seq', network: 'mainnet', dryRun: true })).rejects.toMatchObject({ code: 'ERR_SEQUENCE_IMPLAUSIBLE', exitCode: 4 })
    write(a, 'a2.md')
    const published = await publish(components(a, clients))
    expect(published).toMatchObject({ skipped: false, entries: 7 })
    const devices = new Map(a.index.entries.devices().map(d => [d.id, d.lastSeq]))
    expect(devices.get(A)).toBeLessThan(100)
    expect(devices.get(B)).toBeGreaterThan(0)
    expect(devices.has(F)).toBe(false)
    const status = publishStatus(storeOf(a), a.index.changeMarker(), idle)
    expect(status.refused?.code).toBe('ERR_SEQUENCE_IMPLAUSIBLE')
    expect(status.refused?.message).toMatch(/names this device .* at sequence 281474976710656/)
    // Publishing goes on.
    write(a, 'a3.md')
    expect(await publish(components(a, clients))).toMatchObject({ skipped: false, entries: 8 })
    // Still shown (a key holder forged a publish) until a merge refuses nothing.
    expect(publishStatus(storeOf(a), a.index.changeMarker(), idle).refused?.code).toBe('ERR_SEQUENCE_IMPLAUSIBLE')
    write(b, 'b-more.md')
    expect(await publish(components(b, clients))).toMatchObject({ skipped: false, entries: 9 })
    expect(await publish(components(a, clients))).toMatchObject({ skipped: true, merged: 1 })
    expect(publishStatus(storeOf(a), a.index.changeMarker(), idle).refused).toBeNull()
  })
})
