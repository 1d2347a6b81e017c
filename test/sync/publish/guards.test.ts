import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pino from 'pino'
import { publish, SyncStore, SyncRunner } from '../../../src/sync/index.js'
import { PointerUnreadableError, PublishContendedError, PublishHeldError, PublishStateError } from '../../../src/errors.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { closeDeviceIndex, syncDevice, writeRows as write, type SyncDevice as Device, syncOf } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })


function remove (d: Device, ...paths: string[]): void {
  d.index.entries.apply(d.id, paths.map(path => ({ kind: 'delete' as const, folder: 'notes', path })))
}

/** What a newer or broken cidsync could leave in sync.sqlite: written the way SQLite allows, not through our store. */
function setJob (d: Device, fields: string): void {
  const db = new Database(join(d.config.stateDir, 'sync.sqlite'))
  db.exec(`UPDATE publish_jobs SET ${fields} WHERE step NOT IN ('done', 'abandoned')`)
  db.close()
}

describe.skipIf(EXTERNAL)('a publish that cannot go on', () => {
  it('with an unknown step is given up loudly at once, and the next publish starts over', async () => {
    const { clients, local } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'guards' })
    write(a, 'x.md')
    local?.faults.set('pointers_put', { errorRate: 1, status: 400, times: 1 })
    await expect(publish(syncOf(a, clients, logger))).rejects.toThrow(/answered 400/)
    setJob(a, "step = 'frobnicate'")
    await expect(publish(syncOf(a, clients, logger))).rejects.toThrow(PublishStateError)
    const store = new SyncStore(a.config.stateDir)
    expect(store.current()).toBeUndefined()
    store.close()
    expect(await publish(syncOf(a, clients, logger))).toMatchObject({ skipped: false, entries: 1 })
  })

  it('outrun by other devices too often is given up and started over, not left to fail forever', async () => {
    const { clients, local } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'guards' })
    write(a, 'x.md')
    local?.faults.set('pointers_put', { errorRate: 1, status: 400, times: 1 })
    await expect(publish(syncOf(a, clients, logger))).rejects.toThrow(/answered 400/)
    setJob(a, 'merges = 3')
    await expect(publish(syncOf(a, clients, logger))).rejects.toThrow(PublishContendedError)
    const published = await publish(syncOf(a, clients, logger))
    expect(published).toMatchObject({ skipped: false, merged: 0, entries: 1 })
    expect((await clients.pointers.current('guards', 'mainnet')).snapshotCid).toBe(published.cid)
  })

  it('that drops most of this device\'s entries is held until confirmed; a small drop is not', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'guards', snapshot: 'deal = false\nmax_drop_entries = 10\n' })
    const names = Array.from({ length: 40 }, (_, i) => `f${i}.md`)
    write(a, ...names)
    const first = await publish(syncOf(a, clients, logger))
    remove(a, ...names.slice(0, 5))
    expect(await publish(syncOf(a, clients, logger))).toMatchObject({ skipped: false, entries: 35 })
    remove(a, ...names.slice(5, 30))
    const held = await publish(syncOf(a, clients, logger)).catch((e: unknown) => e)
    expect(held).toBeInstanceOf(PublishHeldError)
    expect((held as PublishHeldError).message).toContain('it would drop 25 of the 35 entries this device last published (10 left)')
    expect((held as PublishHeldError).message).toContain('cidsync snapshot --confirm-drop')
    expect((await clients.pointers.current('guards', 'mainnet')).memories).toBe(35)
    const confirmed = await publish(syncOf(a, clients, logger), { confirmDrop: true })
    expect(confirmed).toMatchObject({ skipped: false, entries: 10 })
    expect(confirmed.cid).not.toBe(first.cid)
  })

  it('whose pointer names a missing or a foreign snapshot says so with the repair, and the repair keeps every row', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'guards' })
    const b = await syncDevice(root, 'b', 'bbbbbbbb-0000-4000-8000-000000000000', { namespace: 'guards' })
    const { exportKey, importKey } = await import('../../../src/snapshot/index.js')
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    write(a, 'from-a.md')
    await publish(syncOf(a, clients, logger))
    write(b, 'from-b.md')
    await publish(syncOf(b, clients, logger))

    // Missing: a CID no gateway has. Foreign: a file that is not a snapshot.
    const foreignFile = join(root, 'not-a-snapshot.txt')
    await writeFile(foreignFile, 'hello, I am not a snapshot')
    const { SNAPSHOT_PROFILE } = await import('../../../src/sync/index.js')
    const foreign = await clients.objects.put(foreignFile, SNAPSHOT_PROFILE)
    for (const bad of ['bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', foreign.cid]) {
      await clients.pointers.put({ snapshotCid: bad, engine: 'cidsync-sqlite/1', namespace: 'guards', network: 'mainnet', memories: 2 })
      write(b, `after-${bad.slice(-6)}.md`)
      const err = await publish(syncOf(b, clients, logger)).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(PointerUnreadableError)
      expect((err as Error).message).toContain(`names ${bad}, which cannot be used here`)
      expect((err as Error).message).toContain('cidsync pointer repair')
      const repaired = await publish(syncOf(b, clients, logger), { repairPointer: true })
      expect((await clients.pointers.current('guards', 'mainnet')).snapshotCid).toBe(repaired.cid)
      expect(b.index.entries.list().map(e => e.path)).toContain('from-a.md')
    }
  })
})

describe.skipIf(EXTERNAL)('a device whose index was rebuilt', () => {
  it('wins its own rows back: others take what it holds now, not the stale rows they kept', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const id = 'aaaaaaaa-0000-4000-8000-000000000000'
    const a = await syncDevice(root, 'a', id, { namespace: 'guards' })
    const b = await syncDevice(root, 'b', 'bbbbbbbb-0000-4000-8000-000000000000', { namespace: 'guards' })
    const { exportKey, importKey } = await import('../../../src/snapshot/index.js')
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    write(a, 'old-1.md', 'old-2.md')
    write(a, 'old-3.md')
    await publish(syncOf(a, clients, logger))
    write(b, 'from-b.md')
    await publish(syncOf(b, clients, logger))

    // a's index is lost and rebuilt from its folder, which now holds one file: its sequence starts over.
    closeDeviceIndex(a)
    const { rm } = await import('node:fs/promises')
    for (const suffix of ['', '-wal', '-shm']) await rm(`${a.index.path}${suffix}`, { force: true })
    const rebuilt = await syncDevice(root, 'a', id, { namespace: 'guards' })
    write(rebuilt, 'new.md')
    await publish(syncOf(rebuilt, clients, logger))
    await publish(syncOf(b, clients, logger))
    expect(b.index.entries.list({ deviceId: id }).map(e => e.path)).toEqual(['new.md'])
  })
})

describe.skipIf(EXTERNAL)('an upload whose answer was lost', () => {
  it('is found in the listing and reused, not sent again into a second row', async () => {
    const { clients, local } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'guards' })
    write(a, 'x.md')
    local?.faults.set('upload', { resetAfterRate: 1, times: 1 })
    const published = await publish(syncOf(a, clients, logger))
    const rows = new Map<string, number>()
    for await (const record of clients.files()) rows.set(record.cid, (rows.get(record.cid) ?? 0) + 1)
    // A segment, the manifest and the plain root, each in one row: the upload that lost its answer was found, not sent again.
    expect(rows.get(published.cid)).toBe(1)
    expect([...rows.values()]).toEqual([1, 1, 1])
    // The log keeps answered requests: the first upload's answer was lost, the second's arrived.
    expect(local?.requestLog().filter(r => r.route === 'upload')).toHaveLength(1)
  })
})

describe.skipIf(EXTERNAL)('the runner after a failed publish', () => {
  it('tries again after a wait that grows, and says when; a held publish waits for a change instead', async () => {
    const { clients, local } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', 'aaaaaaaa-0000-4000-8000-000000000000', { namespace: 'guards', snapshot: 'deal = false\nmax_drop_entries = 1\n' })
    const runner = new SyncRunner({ ...syncOf(a, clients, logger), credentials: () => ({ apiKey: undefined, sessionToken: undefined }) })
    try {
      write(a, 'one.md', 'two.md', 'three.md', 'four.md')
      // As the daemon does at start: a publish after changes is pending when the user asks for one.
      runner.noteChange()
      const first = await runner.publishNow()
      expect(runner.status()).toMatchObject({ last: { cid: first.cid, entries: 4, root: expect.stringMatching(/^bafy/) as unknown }, pointer: { cid: first.cid, inSync: true, why: null }, retryAt: null })

      write(a, 'five.md')
      local?.faults.set('pointers_get', { errorRate: 1, status: 503 })
      const before = Date.now()
      await expect(runner.publishNow()).rejects.toThrow()
      const failed = runner.status()
      expect(failed.retryAt).not.toBeNull()
      const wait = Date.parse(failed.retryAt as string) - before
      expect(wait).toBeGreaterThan(7_000)
      expect(wait).toBeLessThan(13_000 + (Date.now() - before))
      expect(failed.pointer.inSync).toBe(false)
      local?.faults.clear()
      const next = await runner.publishNow()
      expect(runner.status()).toMatchObject({ retryAt: null, lastError: null, pointer: { cid: next.cid, inSync: true } })

      remove(a, 'one.md', 'two.md', 'three.md', 'four.md')
      await expect(runner.publishNow()).rejects.toThrow(PublishHeldError)
      expect(runner.status()).toMatchObject({ retryAt: null, held: { dropping: 4, of: 5 } })
      await runner.publishNow('request', { confirmDrop: true })
      expect(runner.status().held).toBeNull()
    } finally {
      await runner.stop()
    }
  })
})
