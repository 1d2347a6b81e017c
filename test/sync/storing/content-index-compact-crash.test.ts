import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import pino from 'pino'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../../helpers/service.js'
import Database from 'better-sqlite3'
import { useTempDir } from '../../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from '../../cli/content-devices.js'
import { COMPACT, listed, own, recordsNotHeld, RETENTION, storesNothingAgain } from './index-objects.js'
import { loadConfig, STATE_NAMES } from '../../../src/config/index.js'
import { indexPath, openIndex, readDeviceId } from '../../../src/index/index.js'
import { Repository, SyncStore } from '../../../src/sync/index.js'
import { contentSealing } from '../../../src/sync/storing/index.js'
import { ContentIndex } from '../../../src/sync/storing/content-index.js'
import { putIndexObject } from '../../../src/sync/storing/content-index-batch.js'
import { nextIndexBatch } from '../../../src/sync/storing/index-batch.js'
import type { ContentDevice } from '../../cli/content-devices.js'

/**
 * What a run killed between an index object's upload and its note leaves: some of `d`'s records
 * sealed and stored as its index object, known to no one. Answers its CID.
 */
async function uploadUnnoted (d: ContentDevice, service: Awaited<ReturnType<typeof localServiceUnderTest>>, records: number): Promise<string> {
  const index = openIndex(indexPath(d.state), { readonly: true })
  const store = new SyncStore(d.state)
  const repository = new Repository(loadConfig({ configPath: d.config, env: d.env }), service.clients, { store })
  try {
    const deviceId = readDeviceId(d.state) as string
    const { key } = contentSealing(repository.config, repository.passphrase)
    const batch = nextIndexBatch(index, deviceId, key?.keyId ?? '', 0, () => {})
    // Fewer records than any object the device noted (a count for each call): an object of its own no one knows.
    return await putIndexObject(repository, deviceId, (batch?.records ?? []).slice(0, records), join(d.state, STATE_NAMES.contentSpool))
  } finally {
    store.close()
    index.close()
    await repository.close()
  }
}

/** Every publish kept: only the compaction's objects die. */
const LONG = '[retention]\nkeep_last = 50\nprune_margin = "0s"\n'

describe.skipIf(EXTERNAL)('a prune compacting content index objects, killed', () => {
  it('killed after a new object, full or since the last full one, a rerun finishes and no record is lost', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    const names: string[] = []
    const publish = async (hour: number, files: number): Promise<void> => {
      for (let i = 0; i < files; i++) {
        names.push(`h${hour}-${i}.bin`)
        await writeFile(join(a.folder, `h${hour}-${i}.bin`), randomBytes(2_000 + hour * 10 + i))
      }
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T${String(hour).padStart(2, '0')}:00:00.000Z` })
    }
    await publish(1, 20)
    await publish(2, 3)
    await publish(3, 3)
    // Killed in a full compaction (6 records since the first pass's 20, past a quarter): the first
    // pass's base stays noted; the rerun writes everything again.
    const killed = await a.run(['prune'], { ...COMPACT, CIDSYNC_FAILPOINT: 'prune:index-compacted' })
    expect(killed.signal).toBe('SIGKILL')
    await ok(a, ['prune'], COMPACT)
    const [full] = await listed(service, 'cidsync-content-index.sealed')
    expect(own(a)).toEqual([full])
    // Killed in a compaction of what came since: the base stays, the rerun replaces the rest.
    await publish(4, 1)
    await publish(5, 1)
    const again = await a.run(['prune'], { ...COMPACT, CIDSYNC_FAILPOINT: 'prune:index-compacted' })
    expect(again.signal).toBe('SIGKILL')
    await ok(a, ['prune'], COMPACT)
    const after = await listed(service, 'cidsync-content-index.sealed')
    expect(after).toContain(full)
    expect(after.length).toBeLessThanOrEqual(3)
    expect(own(a)).toEqual(after)

    // Another device with the key holding every file stores none of them again.
    await storesNothingAgain(root, service, a, names, '2026-03-01T10:00:00.000Z')
  }, 300_000)

  it('an object of its own uploaded and never noted (a kill between the two): found by the next publish as its own, replaced and deleted by a prune', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    for (let i = 0; i < 5; i++) await writeFile(join(a.folder, `f${i}.bin`), randomBytes(2_000 + i))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    const stranded = await uploadUnnoted(a, service, 2)
    const readBefore = await uploadUnnoted(a, service, 3)
    expect(own(a)).not.toContain(stranded)
    await writeFile(join(a.folder, 'later.bin'), randomBytes(2_345))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    expect(own(a)).toEqual(expect.arrayContaining([stranded, readBefore]))
    // As an older cidsync left one: read as another device's.
    const sync = new Database(join(a.state, 'sync.sqlite'))
    try {
      sync.prepare("UPDATE content_index_objects SET state = 'read' WHERE cid = ?").run(readBefore)
    } finally {
      sync.close()
    }
    await ok(a, ['prune'], COMPACT)
    const left = await listed(service, 'cidsync-content-index.sealed')
    expect(left).not.toContain(stranded)
    expect(left).not.toContain(readBefore)
    expect(left).toEqual(own(a))
    await storesNothingAgain(root, service, a, [...Array.from({ length: 5 }, (_, i) => `f${i}.bin`), 'later.bin'], '2026-03-01T03:00:00.000Z')
  }, 300_000)

  it('loses no record: another device with the same files stores nothing again, and restores every file', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', LONG)
    const names: string[] = []
    for (let i = 0; i < 20; i++) { names.push(`base-${i}.bin`); await writeFile(join(a.folder, `base-${i}.bin`), randomBytes(2_000 + i)) }
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    let hour = 2
    const publishOne = async (): Promise<void> => {
      const name = `p${hour}.bin`
      names.push(name)
      await writeFile(join(a.folder, name), randomBytes(3_000 + hour))
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T${String(hour).padStart(2, '0')}:00:00.000Z` })
      hour++
    }
    // Five records since the first pass's 20, a quarter of it: a full compaction, as one object.
    for (let i = 0; i < 5; i++) await publishOne()
    await ok(a, ['prune'], COMPACT)
    expect(await listed(service, 'cidsync-content-index.sealed')).toHaveLength(1)

    // Partial compactions, each killed: after the compaction and listing, then after the first delete.
    await publishOne()
    await publishOne()
    const k1 = await a.run(['prune'], { ...COMPACT, CIDSYNC_FAILPOINT: 'prune:listed' })
    expect(k1.signal).toBe('SIGKILL')
    await publishOne()
    const k2 = await a.run(['prune'], { ...COMPACT, CIDSYNC_FAILPOINT: 'prune:deleted', CIDSYNC_TEST_PRUNE_BATCH: '1' })
    expect(k2.signal).toBe('SIGKILL')
    await publishOne()
    await publishOne()
    await ok(a, ['prune'], COMPACT)
    // A full one, killed after it
    for (let i = 0; i < 4; i++) await publishOne()
    const k3 = await a.run(['prune'], { ...COMPACT, CIDSYNC_FAILPOINT: 'prune:deleted', CIDSYNC_TEST_PRUNE_BATCH: '1' })
    expect(k3.signal).toBe('SIGKILL')
    await publishOne()
    await ok(a, ['prune'], COMPACT)
    await ok(a, ['prune'], COMPACT)
    const indexObjects = await listed(service, 'cidsync-content-index.sealed')
    expect(indexObjects.length).toBeGreaterThan(0)

    await storesNothingAgain(root, service, a, names, `2026-03-01T${String(hour).padStart(2, '0')}:00:00.000Z`, LONG)
    const c = await contentDevice(root, service, 'c', LONG)
    await shareKey(a, c)
    await ok(c, ['restore'])
    await ok(c, ['restore', '--files', '--to', join(root, 'back')])
  }, 600_000)

  it('a prune killed between its delete and its note leaves no index object counted as its own that the store no longer holds', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', LONG)
    await writeFile(join(a.folder, 'one.bin'), randomBytes(2_000))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    await writeFile(join(a.folder, 'two.bin'), randomBytes(2_001))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    await writeFile(join(a.folder, 'two-b.bin'), randomBytes(2_003))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:30:00.000Z' })
    expect(own(a)).toHaveLength(3)
    // A full compaction: its object is noted as the base, then the three old ones are deleted in one batch, and the kill comes.
    const killed = await a.run(['prune'], { ...COMPACT, CIDSYNC_FAILPOINT: 'prune:deleted' })
    expect(killed.signal).toBe('SIGKILL')
    // The rerun finishes what the killed one left.
    await ok(a, ['prune'], COMPACT)
    const left = await listed(service, 'cidsync-content-index.sealed')
    expect(left).toHaveLength(1)
    expect(own(a)).toEqual(left)

    // One publish since the base, below the bound of 2: the next prune compacts nothing.
    await writeFile(join(a.folder, 'three.bin'), randomBytes(2_002))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    const before = await listed(service, 'cidsync-content-index.sealed')
    expect(before).toHaveLength(2)
    await ok(a, ['prune'], COMPACT)
    expect(await listed(service, 'cidsync-content-index.sealed')).toEqual(before)
  }, 300_000)

  it('a first pass whose cursor a prune in another process moved notes no base, and the next prune loses no record', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', LONG)
    await writeFile(join(a.folder, 'one.bin'), randomBytes(2_000))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    const deviceId = readDeviceId(a.state) as string
    const config = loadConfig({ configPath: a.config, env: a.env })
    const index = openIndex(indexPath(a.state))
    // Records enough for three index objects, copies of the real one under new CIDs; none sent yet
    // (as after every send failed), and no base.
    const real = index.db.prepare('SELECT size, sealing, key_id AS keyId, key_salt AS keySalt, objects FROM content WHERE device_id = ?').get(deviceId) as { size: number, sealing: string, keyId: string, keySalt: string, objects: string }
    index.content.record(deviceId, 'a', Array.from({ length: 12_000 }, (_, i) => ({ ...real, cid: `bafkrei${String(i).padStart(52, 'a')}` })))
    for (const cid of await listed(service, 'cidsync-content-index.sealed')) await service.clients.objects.delete(cid)
    const sync = new Database(join(a.state, 'sync.sqlite'))
    sync.prepare("DELETE FROM sync_state WHERE key IN ('content_index_sent', 'content_index_base')").run()
    sync.prepare('DELETE FROM content_index_objects').run()
    sync.close()
    // The daemon's storing pass, and a prune's compaction beside it, each with its own connection.
    const daemonStore = new SyncStore(a.state)
    const daemon = new Repository(config, service.clients, { store: daemonStore })
    const pruneStore = new SyncStore(a.state)
    const prune = new Repository(config, service.clients, { store: pruneStore })
    const keyId = contentSealing(config, daemon.passphrase).key?.keyId ?? ''
    const spool = join(a.state, STATE_NAMES.contentSpool)
    try {
      // The prune sealed and uploaded its first two objects...
      const c1 = nextIndexBatch(index, deviceId, keyId, 0, () => {})
      const c2 = nextIndexBatch(index, deviceId, keyId, c1?.last ?? 0, () => {})
      const o1 = await putIndexObject(prune, deviceId, c1?.records ?? [], spool)
      const o2 = await putIndexObject(prune, deviceId, c2?.records ?? [], spool)
      const state = daemonStore.contentIndex
      const noteSent = state.noteSent.bind(state)
      let first = true
      state.noteSent = (...args: Parameters<typeof noteSent>) => {
        noteSent(...args)
        if (!first) return
        first = false
        // ...and notes them right after the pass's first note: the cursor moves past what the pass
        // sent. The prune is killed there, before it notes its base.
        pruneStore.contentIndex.noteCompacted(deviceId, c1?.last ?? 0, o1, c1?.records.length ?? 0)
        pruneStore.contentIndex.noteCompacted(deviceId, c2?.last ?? 0, o2, c2?.records.length ?? 0)
      }
      await new ContentIndex({ repository: daemon, index, logger: pino({ level: 'silent' }), deviceId, hostname: 'a' }, { keyId }).send()
      expect(state.compactionBase(deviceId)).toBeUndefined()
    } finally {
      index.close()
      daemonStore.close()
      pruneStore.close()
      await daemon.close()
      await prune.close()
    }
    expect(await recordsNotHeld(a, service)).toEqual([])
    await ok(a, ['prune'], COMPACT)
    expect(await recordsNotHeld(a, service)).toEqual([])
  }, 300_000)
})
