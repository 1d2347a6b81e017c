import { describe, expect, it, onTestFinished } from 'vitest'
import { chmod, copyFile, cp, mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises'
import { createHash, randomBytes } from 'node:crypto'
import { join, relative } from 'node:path'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import pino from 'pino'
import { loadConfig, type Config } from '../../../src/config/index.js'
import { bytesCid, cidProfile } from '../../../src/content/index.js'
import { sealedSize } from '../../../src/custody/index.js'
import { indexPath, loadOrCreateDeviceId, openIndex, type Index } from '../../../src/index/index.js'
import { MAX_CONTENT_INDEX_RECORDS, writingKey } from '../../../src/snapshot/index.js'
import { SNAPSHOT_PROFILE, storeContent, SyncStore, type Repository, type StoreContentProgress, type StoreContentResult } from '../../../src/sync/index.js'
import { repositoryOf } from '../../helpers/sync-device.js'
import { EXTERNAL, localServiceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { contentDevice, contentObjects, ok, shareKey, tree, type ContentDevice } from '../../cli/content-devices.js'
import type { LocalService } from '../../cli/v2-cli.js'
import Database from 'better-sqlite3'
import { create as digestOf } from 'multiformats/hashes/digest'
import { ContentNotFoundError } from '../../../src/errors.js'
import type { ObjectHome, ObjectInfo, ObjectStore } from '../../../src/store/index.js'
import { ContentIndex } from '../../../src/sync/storing/content-index.js'

const INDEX_NAME = 'cidsync-content-index.sealed'

/** A device run in this process over a config `contentDevice` wrote: its index rows made from its folder. */
interface Storing {
  readonly cli: ContentDevice
  readonly index: Index
  readonly store: SyncStore
  readonly deviceId: string
  readonly keyId: string
  readonly logs: string[]
  /** Indexes the folder as it is now (every file a row), then runs one storing pass. */
  pass: (onProgress?: (event: StoreContentProgress) => void) => Promise<StoreContentResult>
}

async function storing (root: string, service: LocalService, name: string, key?: ContentDevice): Promise<Storing> {
  const cli = await contentDevice(root, service, name)
  const config = loadConfig({ configPath: cli.config, env: {} })
  await mkdir(config.stateDir, { recursive: true })
  if (key !== undefined) {
    await copyFile(join(key.state, 'snapshot.key'), join(cli.state, 'snapshot.key'))
    await chmod(join(cli.state, 'snapshot.key'), 0o600)
  }
  const deviceId = loadOrCreateDeviceId(config.stateDir)
  const index = openIndex(indexPath(config.stateDir))
  onTestFinished(() => { index.close() })
  index.entries.registerDevice(deviceId, name)
  const store = new SyncStore(config.stateDir)
  onTestFinished(() => { store.close() })
  const logs: string[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => { logs.push(line) } })
  const profile = cidProfile(config.cidProfile)
  const pass = async (onProgress?: (event: StoreContentProgress) => void): Promise<StoreContentResult> => {
    const rows = []
    for (const entry of await readdir(cli.folder, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue
      const bytes = await readFile(join(entry.parentPath, entry.name))
      rows.push({ kind: 'upsert' as const, folder: 'notes', path: relative(cli.folder, join(entry.parentPath, entry.name)), size: bytes.byteLength, mtimeMs: 1, cid: bytesCid(bytes, profile).toString(), cidProfile: config.cidProfile })
    }
    index.entries.apply(deviceId, rows)
    return await storeContent({ index, repository: repositoryOf({ config, store }, service.clients), logger, deviceId, hostname: name }, { onProgress })
  }
  return { cli, index, store, deviceId, keyId: writingKey(config.stateDir).keyId, logs, pass }
}

async function someFiles (dir: string, count: number, seed: string): Promise<void> {
  await mkdir(join(dir, 'sub'), { recursive: true })
  // One file of parts, the rest packed.
  await writeFile(join(dir, 'sub', 'large.bin'), createHash('sha256').update(seed).digest().toString('hex').repeat(20_000))
  for (let i = 0; i < count; i++) await writeFile(join(dir, 'sub', `small-${i}.txt`), `${seed} ${i} ${randomBytes(100 + i * 37).toString('hex')}`)
}

/** The uploads listing: each upload's CID and name, newest first. */
async function listing (service: LocalService): Promise<Array<{ cid: string, name: string }>> {
  const out: Array<{ cid: string, name: string }> = []
  for await (const r of service.clients.files()) out.push({ cid: r.cid, name: r.fileName })
  return out
}

async function indexObjects (service: LocalService): Promise<string[]> {
  return [...new Set((await listing(service)).filter(r => r.name === INDEX_NAME).map(r => r.cid))]
}

async function cidOf (text: string): Promise<string> {
  return CID.createV1(0x55, await sha256.digest(new TextEncoder().encode(text))).toString()
}

/** A state dir with an index and a sync store, closed after the test, and a logger kept in `logs`. */
async function bareDevice (): Promise<{ stateDir: string, config: Config, deviceId: string, index: ReturnType<typeof openIndex>, store: SyncStore, logs: string[], logger: pino.Logger }> {
  const root = await useTempDir()
  await writeFile(join(root, 'c.toml'), 'state_dir = "state"\n')
  const config = loadConfig({ configPath: join(root, 'c.toml'), env: {} })
  const { stateDir } = config
  await mkdir(stateDir, { recursive: true })
  const deviceId = loadOrCreateDeviceId(stateDir)
  const index = openIndex(indexPath(stateDir))
  onTestFinished(() => { index.close() })
  const store = new SyncStore(stateDir)
  onTestFinished(() => { store.close() })
  const logs: string[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => { logs.push(line) } })
  return { stateDir, config, deviceId, index, store, logs, logger }
}

/** A repository whose objects are `objects` alone: a lying service's listing. */
function lyingHome (config: Config, store: SyncStore, objects: ObjectStore): Repository {
  return repositoryOf({ config, store }, { objects } as unknown as ObjectHome)
}

describe.skipIf(EXTERNAL)('the content index: what another device stored is known without a publish', () => {
  it('a device with the same files as one that stored them and never published uploads none of them, and its publish restores them on a third device', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await storing(root, service, 'a')
    await someFiles(a.cli.folder, 30, 'same')
    const stored = await a.pass()
    expect(stored.storedFiles).toBe(31)
    expect(stored.contentIndex).toMatchObject({ sent: 1, errors: [] })

    const b = await contentDevice(root, service, 'b')
    await shareKey(a.cli, b)
    await cp(a.cli.folder, b.folder, { recursive: true })
    const before = new Set((await listing(service)).map(r => r.cid))
    const storedB = await ok(b, ['snapshot'])
    expect(storedB.stderr).toContain('content: nothing new to store')
    const fresh = (await listing(service)).filter(r => !before.has(r.cid))
    const objects = contentObjects(a.cli)
    // Index objects, segments and a manifest: no pack, no part, nothing a's records name.
    expect(fresh.filter(r => objects.has(r.cid) || r.name.startsWith('cidsync-pack') || r.name.startsWith('cidsync-part')), storedB.stderr).toEqual([])

    const c = await contentDevice(root, service, 'c')
    await shareKey(a.cli, c)
    await ok(c, ['restore'])
    const to = join(root, 'back')
    await ok(c, ['restore', '--files', '--to', to])
    expect(await tree(join(to, 'notes'))).toEqual(await tree(a.cli.folder))
  }, 300_000)

  it('refuses a garbled and a forged index object, skips one under another key, and stores the rest', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await storing(root, service, 'a')
    await someFiles(a.cli.folder, 5, 'same')
    expect((await a.pass()).storedFiles).toBe(6)
    const [real] = await indexObjects(service)
    // Another key's device: its index object is none of b's business.
    const d = await storing(root, service, 'd')
    await writeFile(join(d.cli.folder, 'own.txt'), 'd alone')
    expect((await d.pass()).contentIndex?.sent).toBe(1)

    // Junk, and a's real object with one byte changed, both listed as index objects.
    const junk = join(root, 'junk')
    await writeFile(junk, randomBytes(3000))
    const flipped = join(root, 'flipped')
    const bytes = Buffer.concat(await service.clients.objects.getBytes(real as string, SNAPSHOT_PROFILE))
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 30) ^ 1, bytes.length - 30)
    await writeFile(flipped, bytes)
    const forged = [
      (await service.clients.objects.put(junk, SNAPSHOT_PROFILE, { name: INDEX_NAME })).cid,
      (await service.clients.objects.put(flipped, SNAPSHOT_PROFILE, { name: INDEX_NAME })).cid
    ]

    const b = await storing(root, service, 'b', a.cli)
    await cp(a.cli.folder, b.cli.folder, { recursive: true })
    await writeFile(join(b.cli.folder, 'new.txt'), 'only b has this')
    const result = await b.pass()
    expect(result.contentIndex).toMatchObject({ found: 4, read: 1, refused: 2, foreignKey: 1, taken: 6 })
    expect(result.storedFiles).toBe(1)
    expect(result.failed).toEqual([])
    for (const cid of forged) expect(b.logs.some(line => line.includes(cid) && line.includes('refused'))).toBe(true)
    expect(b.index.content.totals(b.deviceId).records).toBe(7)
    // The six taken count as saved by dedup: b uploaded none of their bytes.
    const copied = (await readdir(a.cli.folder, { recursive: true, withFileTypes: true })).filter(e => e.isFile())
    let copiedBytes = 0
    for (const entry of copied) copiedBytes += (await stat(join(entry.parentPath, entry.name))).size
    expect(b.store.contentIndex.taken(b.keyId)).toHaveLength(6)
    expect(b.index.content.savedByDedup(b.deviceId, ['notes'], b.keyId, b.store.contentIndex.taken(b.keyId))).toBe(copiedBytes)

    // Known now: the next pass fetches none of them again.
    await writeFile(join(b.cli.folder, 'newer.txt'), 'and this')
    expect((await b.pass()).contentIndex).toMatchObject({ found: 0, read: 0, refused: 0, foreignKey: 0 })
  }, 300_000)

  it('a kill between an index object\'s upload and its cursor sends one object again and loses no record', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await storing(root, service, 'a')
    for (let i = 0; i < 3; i++) await writeFile(join(a.cli.folder, `f-${i}.txt`), `file ${i}`)
    // Once the content is recorded, every upload lands and its answer is lost: the index object's too.
    const first = await a.pass((event) => { if (event.type === 'storing:stored') service.local.faults.set('upload', { resetAfterRate: 1 }) })
    service.local.faults.clear()
    expect(first.storedFiles).toBe(3)
    expect(first.contentIndex?.sent).toBe(0)
    expect(first.contentIndex?.errors).toHaveLength(1)
    expect(await indexObjects(service)).toHaveLength(1)
    expect(a.store.contentIndex.sent(a.deviceId)).toBe(0)

    const second = await a.pass()
    expect(second.contentIndex).toMatchObject({ sent: 1, errors: [] })
    expect(await indexObjects(service)).toHaveLength(2)
    expect(a.store.contentIndex.sent(a.deviceId)).toBeGreaterThan(0)

    const b = await storing(root, service, 'b', a.cli)
    await cp(a.cli.folder, b.cli.folder, { recursive: true })
    const result = await b.pass()
    expect(result.contentIndex).toMatchObject({ read: 2, refused: 0, taken: 3 })
    expect(result.storedFiles).toBe(0)
  }, 300_000)

  it('splits records into objects of at most the bound, each read whole', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await storing(root, service, 'a')
    const object = await cidOf('a pack')
    const records = []
    for (let i = 0; i < MAX_CONTENT_INDEX_RECORDS + 7; i++) {
      records.push({ cid: await cidOf(`file ${i}`), size: 100, sealing: 'aes-256-gcm/1', keyId: a.keyId, keySalt: '', objects: JSON.stringify([[object, i * sealedSize(100), sealedSize(100)]]) })
    }
    a.index.content.record(a.deviceId, 'a', records)
    const result = await a.pass()
    expect(result.contentIndex?.sent).toBe(2)
    expect(await indexObjects(service)).toHaveLength(2)

    const b = await storing(root, service, 'b', a.cli)
    await writeFile(join(b.cli.folder, 'x.txt'), 'something to store, so b looks')
    expect((await b.pass()).contentIndex).toMatchObject({ read: 2, refused: 0 })
    for (const r of [records[0], records.at(-1)]) expect(b.store.contentIndex.known(r?.cid as string, a.keyId)?.deviceId).toBe(a.deviceId)
  }, 300_000)

  it('a listing of endless fresh index objects never grows the state past a bound, and is logged and counted', async () => {
    const { stateDir, config, deviceId, index, store, logs, logger } = await bareDevice()
    // A service that lists, at every walk, objects it never held: each walk's names are new.
    let walks = 0
    const objects = {
      describe: 'a lying service',
      async * list (): AsyncGenerator<ObjectInfo> {
        const walk = walks++
        for (let i = 0; i < 30_000; i++) {
          const digest = digestOf(0x12, createHash('sha256').update(`${walk} ${i}`).digest())
          yield { cid: CID.createV1(0x55, digest).toString(), size: 1000, name: INDEX_NAME, storedAt: Date.now() }
        }
      },
      async getFile (cid: string): Promise<never> { throw new ContentNotFoundError(`the service does not hold ${cid}`) }
    } as unknown as ObjectStore
    const rows = (): number => {
      const db = new Database(join(stateDir, 'sync.sqlite'), { readonly: true })
      try { return db.prepare('SELECT COUNT(*) FROM content_index_objects').pluck().get() as number } finally { db.close() }
    }
    let total = 0
    for (let pass = 0; pass < 3; pass++) {
      const contentIndex = new ContentIndex({ repository: lyingHome(config, store, objects), index, logger, deviceId, hostname: 'a' }, { keyId: writingKey(stateDir).keyId })
      await contentIndex.refresh()
      total += contentIndex.pass.found
      expect(contentIndex.pass.errors.some(e => e.includes('content index objects wait to be read')), JSON.stringify(contentIndex.pass)).toBe(true)
    }
    // Noted at most the bound waiting plus what each pass read: not 90,000 rows.
    expect(rows()).toBeLessThanOrEqual(10_000 + 3 * 1_000)
    expect(total).toBeLessThanOrEqual(10_000 + 3 * 1_000)
    expect(logs.some(line => line.includes('content index objects wait to be read'))).toBe(true)
    // Cut short, the walk keeps no head: the objects past the cut are looked for again.
    expect(store.contentIndex.head()).toBeUndefined()
  }, 120_000)

  it('a listing that names one index object again and again notes it once, and cuts nothing short', async () => {
    const { stateDir, config, deviceId, index, store, logger } = await bareDevice()
    const looped = await cidOf('one index object')
    const objects = {
      describe: 'a looping service',
      async * list (): AsyncGenerator<ObjectInfo> {
        for (let i = 0; i < 20_000; i++) yield { cid: looped, size: 1000, name: INDEX_NAME, storedAt: Date.now() }
      },
      async getFile (cid: string): Promise<never> { throw new ContentNotFoundError(`the service does not hold ${cid}`) }
    } as unknown as ObjectStore
    const contentIndex = new ContentIndex({ repository: lyingHome(config, store, objects), index, logger, deviceId, hostname: 'a' }, { keyId: writingKey(stateDir).keyId })
    await contentIndex.refresh()
    expect(contentIndex.pass).toMatchObject({ found: 1, unreadable: 1, errors: [] })
    expect(store.contentIndex.head()?.cid).toBe(looped)
  }, 60_000)

  it('a listing longer than one walk reads is cut, logged and counted', async () => {
    const { stateDir, config, deviceId, index, store, logs, logger } = await bareDevice()
    const cid = await cidOf('a pack')
    const objects = {
      describe: 'a service that lists without end',
      async * list (): AsyncGenerator<ObjectInfo> {
        // Bounded here only so a walk that never stops fails this test instead of hanging it.
        for (let i = 0; i < 1_500_000; i++) yield { cid, size: 1000, name: 'cidsync-pack.sealed', storedAt: Date.now() }
      }
    } as unknown as ObjectStore
    const contentIndex = new ContentIndex({ repository: lyingHome(config, store, objects), index, logger, deviceId, hostname: 'a' }, { keyId: writingKey(stateDir).keyId })
    await contentIndex.refresh()
    expect(contentIndex.pass.errors.some(e => e.includes('lists more objects than one walk reads')), JSON.stringify(contentIndex.pass)).toBe(true)
    expect(logs.some(line => line.includes('lists more objects than one walk reads'))).toBe(true)
  }, 60_000)
  // A known hole, not fixed yet: `take` trusts a record without asking whether the store holds its
  // objects. A service that lost them (or a replayed index object whose objects were deleted) makes
  // a device that holds the files skip their upload, silently. Drop `.fails` once take checks.
  it('a record whose objects the store no longer holds is not taken: the device that has the files sends them', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await storing(root, service, 'a')
    await someFiles(a.cli.folder, 5, 'same')
    expect((await a.pass()).storedFiles).toBe(6)
    // The service loses every content object a stored; a's index object stays.
    for (const object of contentObjects(a.cli)) expect(await service.clients.objects.delete(object)).toBe(true)

    const b = await storing(root, service, 'b', a.cli)
    await cp(a.cli.folder, b.cli.folder, { recursive: true })
    const result = await b.pass()
    // Taken, b's next publish would name files that cannot be restored: b sends them instead.
    expect(result.contentIndex?.taken).toBe(0)
    expect(result.contentIndex?.missing).toBeGreaterThan(0)
    expect(result.storedFiles).toBe(6)
  }, 300_000)
})
