import { describe, it, expect } from 'vitest'
import { mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import pino from 'pino'
import { loadConfig } from '../../../src/config/index.js'
import { indexPath, openIndex, type Index } from '../../../src/index/index.js'
import { SyncStore, KEPT_BACKUPS, prepareSyncState, publish, restore, SNAPSHOT_PROFILE } from '../../../src/sync/index.js'
import { MAGIC, writeSnapshot, exportKey, importKey } from '../../../src/snapshot/index.js'
import { SnapshotTooLargeError, SnapshotUnencryptedError, SyncStateDamagedError } from '../../../src/errors.js'
import type { ServiceClients } from '../../../src/remote/index.js'
import { serviceUnderTest, EXTERNAL } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { deadPid } from '../../helpers/dead-pid.js'
import { restoring, closeDeviceIndex, syncDevice, writeRows as write, syncOf } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const EVIL = 'eeeeeeee-0000-4000-8000-000000000000'
const NS = 'restore-safety'


const paths = (index: Index): string[] => index.entries.list({ includeDeleted: true }).map(e => e.path)

/** What someone who can write the pointer (not the user's key) puts there: an index of their rows, no cipher. */
async function forgeBehindPointer (clients: ServiceClients, root: string, body?: Buffer): Promise<string> {
  const dir = join(root, 'forger')
  await mkdir(dir, { recursive: true })
  const file = join(dir, 'forged.snap')
  if (body === undefined) {
    const index = openIndex(join(dir, 'index.sqlite'))
    index.entries.registerDevice(EVIL, 'evil')
    index.entries.apply(EVIL, [{ kind: 'upsert', folder: 'notes', path: 'injected.md', size: 1, mtimeMs: 1, cid: 'cid-injected', cidProfile: 'kubo-cidv1' }])
    await writeSnapshot({ index, stateDir: dir, path: file, encryption: 'none', device: EVIL })
    index.close()
  } else {
    await writeFile(file, body)
  }
  const { cid } = await clients.objects.put(file, SNAPSHOT_PROFILE)
  await clients.pointers.put({ snapshotCid: cid, engine: 'cidsync-sqlite/1', namespace: NS, network: 'mainnet', memories: 1 })
  return cid
}

describe.skipIf(EXTERNAL)('a snapshot without a cipher behind the pointer', () => {
  it('is refused by restore (exit 4) and leaves the index untouched; --allow-unencrypted takes it', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: NS })
    write(a, 'mine.md')
    closeDeviceIndex(a)
    await forgeBehindPointer(clients, root)
    const err = await restore(restoring(clients, a.config), { namespace: NS, network: 'mainnet', force: true }).catch((e: unknown) => e as Error)
    expect(err).toBeInstanceOf(SnapshotUnencryptedError)
    expect((err as SnapshotUnencryptedError).exitCode).toBe(4)
    const after = openIndex(indexPath(a.config.stateDir), { readonly: true })
    expect(paths(after)).toEqual(['mine.md'])
    after.close()
    await restore(restoring(clients, a.config), { namespace: NS, network: 'mainnet', force: true, allowUnencrypted: true })
    const taken = openIndex(indexPath(a.config.stateDir), { readonly: true })
    expect(paths(taken)).toEqual(['injected.md'])
    taken.close()
  })

  it('is refused by the merge before a publish, so its rows never get in; [snapshot] accept_unencrypted takes it', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: NS })
    write(a, 'mine.md')
    await publish(syncOf(a, clients, logger))
    await forgeBehindPointer(clients, root)
    write(a, 'later.md')
    await expect(publish(syncOf(a, clients, logger))).rejects.toThrow(SnapshotUnencryptedError)
    expect(paths(a.index)).toEqual(['later.md', 'mine.md'])
    const accepting = { ...a.config, snapshot: { ...a.config.snapshot, acceptUnencrypted: true } }
    expect(loadConfig({ configPath: a.config.source, env: { CIDSYNC_SNAPSHOT_ACCEPT_UNENCRYPTED: 'true' } }).snapshot.acceptUnencrypted).toBe(true)
    const published = await publish(syncOf(a, clients, logger, accepting))
    expect(published.merged).toBe(1)
    expect(paths(a.index)).toContain('injected.md')
  })

  it('that inflates toward GiBs is stopped at its bound (exit 4), with nothing left in the state dir', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: NS })
    closeDeviceIndex(a)
    const header = Buffer.from(JSON.stringify({ format: 1, engine: 'cidsync-sqlite/1', compression: 'gzip', cipher: 'none', nonce: '', keyId: '', salt: '', createdAt: '2026-01-01T00:00:00.000Z', device: EVIL, entries: 1 }))
    const length = Buffer.alloc(2)
    length.writeUInt16BE(header.byteLength)
    const member = gzipSync(Buffer.alloc(4 * 1024 * 1024))
    await forgeBehindPointer(clients, root, Buffer.concat([MAGIC, length, header, ...Array.from({ length: 1024 }, () => member)]))
    const before = (await readdir(a.config.stateDir)).sort()
    const err = await restore(restoring(clients, a.config), { namespace: NS, network: 'mainnet', force: true, allowUnencrypted: true }).catch((e: unknown) => e as Error)
    expect(err).toBeInstanceOf(SnapshotTooLargeError)
    expect((err as SnapshotTooLargeError).exitCode).toBe(4)
    expect((await readdir(a.config.stateDir)).filter(n => n !== 'snapshots').sort()).toEqual(before)
    expect(await readdir(join(a.config.stateDir, 'snapshots'))).toEqual([])
  })
})

/** Device A has published one row (`one.md`); device B, holding A's key, is there to restore it. */
async function publishedOneRow (): Promise<{ clients: ServiceClients, b: Awaited<ReturnType<typeof syncDevice>> }> {
  const { clients } = await serviceUnderTest()
  const root = await useTempDir()
  const a = await syncDevice(root, 'a', A, { namespace: NS })
  write(a, 'one.md')
  await publish(syncOf(a, clients, logger))
  const b = await syncDevice(root, 'b', 'bbbbbbbb-0000-4000-8000-000000000000', { namespace: NS })
  importKey(b.config.stateDir, exportKey(a.config.stateDir))
  return { clients, b }
}

describe.skipIf(EXTERNAL)('restore --force', () => {
  it(`keeps the ${KEPT_BACKUPS} newest backups and removes older ones; the restored index and sync state are 0600`, async () => {
    const { clients, b } = await publishedOneRow()
    closeDeviceIndex(b)
    const old = ['2020-01-01T00-00-00-000Z', '2021-01-01T00-00-00-000Z', '2022-01-01T00-00-00-000Z', '2023-01-01T00-00-00-000Z']
    for (const at of old) await writeFile(join(b.config.stateDir, `index.sqlite.backup-${at}`), 'old backup')
    await writeFile(join(b.config.stateDir, 'index.sqlite.backup-notes.txt'), 'not a backup of ours')
    const first = await restore(restoring(clients, b.config), { namespace: NS, network: 'mainnet', force: true })
    const second = await restore(restoring(clients, b.config), { namespace: NS, network: 'mainnet', force: true })
    const backups = (await readdir(b.config.stateDir)).filter(n => n.startsWith('index.sqlite.backup-')).sort()
    expect(backups).toEqual(['index.sqlite.backup-2023-01-01T00-00-00-000Z', first.backup, second.backup, 'index.sqlite.backup-notes.txt'].map(p => (p as string).split('/').at(-1)).sort())
    for (const name of ['index.sqlite', 'sync.sqlite']) expect((await stat(join(b.config.stateDir, name))).mode & 0o777).toBe(0o600)
  })
})

describe.skipIf(EXTERNAL)('restore --force over a damaged index', () => {
  it('keeps the damaged file as the backup and installs the snapshot', async () => {
    const { clients, b } = await publishedOneRow()
    closeDeviceIndex(b)
    await writeFile(indexPath(b.config.stateDir), Buffer.alloc(8192, 'damaged '))
    const restored = await restore(restoring(clients, b.config), { namespace: NS, network: 'mainnet', force: true })
    expect((await readFile(restored.backup as string)).subarray(0, 7).toString()).toBe('damaged')
    const back = openIndex(indexPath(b.config.stateDir), { readonly: true })
    expect(paths(back)).toEqual(['one.md'])
    back.close()
  })
})

describe.skipIf(EXTERNAL)('restore where the index was removed but its WAL was left (a daemon killed, then index.sqlite deleted)', () => {
  it('installs the snapshot as published: the orphaned WAL is never replayed into it', async () => {
    const { clients, b } = await publishedOneRow()
    // Rows written and not yet checkpointed: they are in index.sqlite-wal alone, as a kill -9 leaves them.
    write(b, ...Array.from({ length: 50 }, (_, i) => `local-${i}.md`))
    const target = indexPath(b.config.stateDir)
    const wal = await readFile(`${target}-wal`)
    expect(wal.length).toBeGreaterThan(0)
    closeDeviceIndex(b)
    await rm(target)
    await writeFile(`${target}-wal`, wal)
    await restore(restoring(clients, b.config), { namespace: NS, network: 'mainnet' })
    const back = openIndex(target, { readonly: true })
    expect(paths(back)).toEqual(['one.md'])
    expect(back.db.pragma('integrity_check', { simple: true })).toBe('ok')
    back.close()
  })
})

describe('sync.sqlite', () => {
  it('that is not a database is reported as damaged (exit 4), never opened as empty', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'sync.sqlite'), Buffer.alloc(4096, 'garbage '))
    let err: unknown
    try { new SyncStore(dir).close() } catch (e) { err = e }
    expect(err).toBeInstanceOf(SyncStateDamagedError)
    expect((err as SyncStateDamagedError).exitCode).toBe(4)
  })
})

describe('leftovers at start', () => {
  it('removes only the temp names of killed jobs, never the unfinished publish\'s snapshot nor anything else', async () => {
    const state = await useTempDir()
    const snapshots = join(state, 'snapshots')
    await mkdir(snapshots)
    const store = new SyncStore(state)
    const job = store.start(null)
    store.snapshotted(job, { snapshotPath: join(snapshots, `publish-${job.id}.snap`), snapshotCid: 'bafy', marker: '[]', entries: 0, files: [], manifest: '{}' })
    store.close()
    // Named by a process that ran and is gone: a live one's files are kept.
    const dead = await deadPid()
    const ours = [`snapshots/publish-${job.id + 1}.snap`, `snapshots/publish-${job.id}.snap.${dead}.part`, `snapshots/publish-${job.id}.snap.${dead}.copy.sqlite`,
      `snapshots/pull-${dead}.snap`, `snapshots/pull-${dead}.snap.${dead}.part`, `snapshots/merge-7-${dead}.sqlite`, `snapshots/merge-7-${dead}.sqlite.${dead}.restore`,
      'snapshots/restore-bafkreiabc.snap', `snapshots/restore-bafkreiabc.snap.${dead}.part`, 'index.sqlite.restoring', `index.sqlite.restoring.${dead}.restore`,
      '.daemon.json.0123456789ab.tmp']
    const kept = [`snapshots/publish-${job.id}.snap`, 'snapshots/my-notes.txt', 'index.sqlite.backup-2024-01-01T00-00-00-000Z', '.device-id.ba9876543210.tmp', 'restore-bafkreiabc.snap']
    for (const name of [...ours, ...kept]) await writeFile(join(state, name), 'x'.repeat(10))
    const hourAgo = new Date(Date.now() - 3_600_000)
    await utimes(join(state, '.daemon.json.0123456789ab.tmp'), hourAgo, hourAgo)
    const prepared = await prepareSyncState(state)
    prepared.store.close()
    expect(prepared.leftovers).toMatchObject({ files: ours.length, bytes: ours.length * 10 })
    expect([...prepared.leftovers.paths].sort()).toEqual(ours.map(n => join(state, n)).sort())
    for (const name of kept) await stat(join(state, name))
    expect(prepared.recovered).toEqual([])
  })
})
