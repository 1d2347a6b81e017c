import { describe, it, expect } from 'vitest'
import { access, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { loadConfig } from '../../src/config/index.js'
import { indexPath, openIndex, type Index } from '../../src/index/index.js'
import { publish, restore, SyncStore } from '../../src/sync/index.js'
import { PointerNotFoundError, UsageError } from '../../src/errors.js'
import { serviceUnderTest, localServiceUnderTest, EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { restoring, closeDeviceIndex, syncDevice, writeRows as write, syncOf } from '../helpers/sync-device.js'

const logger = pino({ level: 'silent' })


const everything = (index: Index): unknown[] => index.entries.list({ includeDeleted: true }).map(e => [e.deviceId, e.path, e.seq, e.deleted])

describe('publishing and restoring', () => {
  it('publishes, skips when nothing changed, and restores an identical index on a fresh device', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'sync-test', snapshot: 'deal = true\n' })
    write(a, 'one.md', 'two.md')
    a.index.entries.apply(a.id, [{ kind: 'delete', folder: 'notes', path: 'two.md' }])
    const first = await publish(syncOf(a, clients, logger))
    expect(first).toMatchObject({ skipped: false, entries: 1, merged: 0 })
    expect(await clients.pointers.current('sync-test', 'mainnet')).toMatchObject({ snapshotCid: first.cid, engine: 'cidsync-sqlite/2', memories: 1 })
    expect(await publish(syncOf(a, clients, logger))).toMatchObject({ skipped: true, cid: first.cid })

    const fresh = await syncDevice(root, 'fresh', 'ffffffff-0000-4000-8000-000000000000', { namespace: 'sync-test', snapshot: 'deal = true\n' })
    closeDeviceIndex(fresh)
    await expect(restore(restoring(clients, fresh.config), { namespace: 'sync-test', network: 'mainnet' })).rejects.toThrow(UsageError)
    const { exportKey, importKey } = await import('../../src/snapshot/index.js')
    importKey(fresh.config.stateDir, exportKey(a.config.stateDir))
    const restored = await restore(restoring(clients, fresh.config), { namespace: 'sync-test', network: 'mainnet', force: true })
    expect(restored.backup).toMatch(/index\.sqlite\.backup-/)
    await access(restored.backup as string)
    const back = openIndex(indexPath(fresh.config.stateDir), { readonly: true })
    expect(everything(back)).toEqual(everything(a.index))
    back.close()
  })

  it('says when nothing is stored for the namespace and network', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const c = await syncDevice(root, 'c', 'cccccccc-0000-4000-8000-000000000000', { namespace: 'sync-test', snapshot: 'deal = true\n' })
    await expect(restore(restoring(clients, c.config), { namespace: 'nothing-here', network: 'mainnet', force: true })).rejects.toThrow(PointerNotFoundError)
  })

  it('merges another device\'s snapshot before publishing over it, so the pointer holds both', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'sync-test', snapshot: 'deal = true\n' })
    const b = await syncDevice(root, 'b', 'bbbbbbbb-0000-4000-8000-000000000000', { namespace: 'sync-test', snapshot: 'deal = true\n' })
    const { exportKey, importKey } = await import('../../src/snapshot/index.js')
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    write(a, 'from-a.md')
    await publish(syncOf(a, clients, logger))
    write(b, 'from-b.md')
    const fromB = await publish(syncOf(b, clients, logger))
    expect(fromB.merged).toBe(1)
    expect(b.index.entries.list().map(e => e.path)).toEqual(['from-a.md', 'from-b.md'])
    write(a, 'later-a.md')
    const fromA = await publish(syncOf(a, clients, logger))
    expect(fromA.merged).toBe(1)
    expect(a.index.entries.list().map(e => e.path)).toEqual(['from-a.md', 'from-b.md', 'later-a.md'])
    expect((await clients.pointers.current('sync-test', 'mainnet')).snapshotCid).toBe(fromA.cid)
  })

  it.skipIf(EXTERNAL)('resumes a publish cut short at the step it reached, with the same snapshot', async () => {
    const { clients, local } = await localServiceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'sync-test', snapshot: 'deal = true\n' })
    write(a, 'x.md')
    local.faults.set('pointers_put', { errorRate: 1, status: 400, times: 1 })
    await expect(publish(syncOf(a, clients, logger))).rejects.toThrow(/answered 400/)
    const store = new SyncStore(a.config.stateDir)
    const stuck = store.current()
    store.close()
    expect(stuck).toMatchObject({ step: 'pointer' })
    const uploadsBefore = local.requestLog().filter(r => r.route === 'upload').length
    const resumed = await publish(syncOf(a, clients, logger))
    expect(resumed.cid).toBe(stuck?.snapshotCid)
    expect(local.requestLog().filter(r => r.route === 'upload').length).toBe(uploadsBefore)
  })
})

describe('restore refusals', () => {
  it.skipIf(EXTERNAL)('refuses corrupted gateway bytes and leaves the existing index untouched; refuses a wrong key with exit 4', async () => {
    const { clients, local } = await localServiceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'sync-test', snapshot: 'deal = true\n' })
    write(a, 'precious.md')
    await publish(syncOf(a, clients, logger))
    const b = await syncDevice(root, 'b', 'bbbbbbbb-0000-4000-8000-000000000000', { namespace: 'sync-test', snapshot: 'deal = true\n' })
    write(b, 'b-own.md')
    const before = everything(b.index)
    closeDeviceIndex(b)
    const { exportKey, importKey } = await import('../../src/snapshot/index.js')
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    local.faults.set('gateway', { bitflip: true, times: 1 })
    const { IntegrityError } = await import('../../src/errors.js')
    await expect(restore(restoring(clients, b.config), { namespace: 'sync-test', network: 'mainnet', force: true })).rejects.toThrow(IntegrityError)
    const untouched = openIndex(indexPath(b.config.stateDir), { readonly: true })
    expect(everything(untouched)).toEqual(before)
    untouched.close()

    const c = await useTempDir()
    await writeFile(join(c, 'c.toml'), 'state_dir = "state"\nnamespace = "sync-test"\n')
    const cConfig = loadConfig({ configPath: join(c, 'c.toml'), env: {} })
    await mkdir(cConfig.stateDir, { recursive: true })
    exportKey(cConfig.stateDir)
    const err = await restore(restoring(clients, cConfig), { namespace: 'sync-test', network: 'mainnet' }).catch((e: unknown) => e) as { exitCode: number, message: string }
    expect(err.exitCode).toBe(4)
    expect(err.message).toContain('import the right one')
  })
})
