import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, type ContentDevice } from './content-devices.js'
import { sha } from './retention-devices.js'
import { SNAPSHOT_PROFILE } from '../../src/sync/read/index.js'
import { acquireLock } from '../../src/state-lock/index.js'
import { loadConfig } from '../../src/config/index.js'
import { indexPath, openIndex } from '../../src/index/index.js'
import { downloadFile, Repository, selectRows } from '../../src/sync/index.js'

const RETENTION = '[retention]\nkeep_last = 2\nprune_margin = "0s"\n'
const FILES = 10

interface Repacked { packs: number, blobs: number, bytes: number, freed: number, made: number, waiting: number, skipped?: string }
interface PruneJson { deleted: { content: number }, repacked?: Repacked }

/** The object this device's record names for each live small file, by the file's CID. */
function recordObjects (d: ContentDevice): Map<string, string> {
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true })
  try {
    const rows = db.prepare('SELECT c.cid, c.objects FROM content c WHERE c.size < 100000 AND c.cid IN (SELECT cid FROM entries WHERE deleted = 0)').all() as Array<{ cid: string, objects: string }>
    return new Map(rows.map(r => [r.cid, (JSON.parse(r.objects) as Array<[string]>)[0]?.[0] ?? '']))
  } finally {
    db.close()
  }
}

/** Writes each of `names` anew; answers every file's SHA-256 by name. */
async function rewrite (d: ContentDevice, names: readonly number[], held: Map<string, string>): Promise<Map<string, string>> {
  for (const i of names) await writeFile(join(d.folder, `s${i}.txt`), randomBytes(20_000 + i))
  const now = new Map(held)
  for (const i of names) now.set(`s${i}.txt`, sha(await readFile(join(d.folder, `s${i}.txt`))))
  return now
}

/** Every object any record of this device's index names. */
function allRecordObjects (d: ContentDevice): string[] {
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true })
  try {
    return (db.prepare('SELECT objects FROM content').pluck().all() as string[]).flatMap(o => (JSON.parse(o) as Array<[string]>).map(p => p[0]))
  } finally {
    db.close()
  }
}

async function expectFiles (d: ContentDevice, want: Map<string, string>, to: string, extra: string[] = []): Promise<void> {
  await rm(to, { recursive: true, force: true })
  const got = await d.run(['get', ...[...want.keys()].map(n => `notes/${n}`), '--to', to, ...extra])
  expect(got.code, `${d.name}: get ${extra.join(' ')}: ${got.stderr}`).toBe(0)
  for (const [name, hash] of want) expect(sha(await readFile(join(to, 'notes', name))), `${name} ${extra.join(' ')}`).toBe(hash)
}

/**
 * The dashboard's download of a past version (`downloadFile`): the past publish's record names the
 * deleted pack; with this device's index beside it, the newer record brings the file back.
 */
async function expectDownloadAt (d: ContentDevice, service: Awaited<ReturnType<typeof localServiceUnderTest>>, at: string, name: string, hash: string | undefined): Promise<void> {
  const repository = new Repository(loadConfig({ configPath: d.config, env: d.env }), service.clients)
  const local = openIndex(indexPath(d.state), { readonly: true })
  try {
    const past = await repository.pastIndex(new Date(at))
    const row = selectRows(past.index, { paths: [`notes/${name}`], prefix: false })[0]
    if (row === undefined) throw new Error(`${name} is not in the publish of ${at}`)
    await expect(downloadFile(repository, past.index, { row })).rejects.toMatchObject({ code: 'ERR_CONTENT_NOT_FOUND' })
    const got = await downloadFile(repository, past.index, { row, newer: local })
    expect(sha(await readFile(got.path))).toBe(hash)
    await got.remove()
  } finally {
    local.close()
    await repository.close()
  }
}

/**
 * Ten small files in one pack, eight of them rewritten twice: once the first publish is forgotten,
 * the first pack holds two live files of ten. Answers the device, the files of each publish, and the pack.
 */
async function mostlyDeadPack (root: string): Promise<{ a: ContentDevice, service: Awaited<ReturnType<typeof localServiceUnderTest>>, v3: Map<string, string>, v2: Map<string, string>, pack: string }> {
  const service = await localServiceUnderTest({ dir: join(root, 'service') })
  const a = await contentDevice(root, service, 'a', RETENTION)
  const all = Array.from({ length: FILES }, (_, i) => i)
  const v1 = await rewrite(a, all, new Map())
  await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
  const pack = [...new Set(recordObjects(a).values())]
  expect(pack.length).toBe(1)
  const v2 = await rewrite(a, all.slice(0, 8), v1)
  await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
  const v3 = await rewrite(a, all.slice(0, 8), v2)
  await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
  await ok(a, ['forget'])
  return { a, service, v2, v3, pack: pack[0] as string }
}

describe.skipIf(EXTERNAL)('a prune repacks mostly dead packs', () => {
  it('copies the live files of a mostly dead pack into a new one; the prune after a publish deletes the old; every kept publish and a new device restore', async () => {
    const root = await useTempDir()
    const { a, service, v2, v3, pack } = await mostlyDeadPack(root)
    const dry = JSON.parse((await ok(a, ['prune', '--dry-run', '--json'])).stdout) as PruneJson
    expect(dry.repacked).toMatchObject({ packs: 1, blobs: 2, made: 0 })
    const pruned = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson
    expect(pruned.repacked).toMatchObject({ packs: 1, blobs: 2, made: 1, waiting: 0 })
    expect(pruned.repacked?.freed).toBeGreaterThan(8 * 20_000)
    // The two files' records name the new pack now; the old pack stays until a publish names it.
    const moved = recordObjects(a)
    expect([...moved.values()]).not.toContain(pack)
    expect(await service.clients.objects.has(pack)).toBe(true)
    await expectFiles(a, v3, join(root, 'got-head'))
    // Status says the old pack waits for a publish, with no daemon running.
    const status = await a.run(['status'])
    expect(status.stdout).toContain('retention: 1 rewritten content pack waits for a publish; the prune after it deletes it')
    expect(status.stdout).toMatch(/rewrote 1 mostly unused content pack \(.* of live files copied\)/)
    // A second prune before any publish moves nothing again, and deletes nothing live.
    const again = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson
    expect(again.repacked).toMatchObject({ packs: 0, waiting: 1 })
    expect(await service.clients.objects.has(pack)).toBe(true)

    // The publish names the new pack: the next forget and prune delete the old one.
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
    await ok(a, ['forget'])
    const after = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson
    expect(after.deleted.content).toBeGreaterThanOrEqual(1)
    expect(await service.clients.objects.has(pack)).toBe(false)
    expect(after.repacked).toMatchObject({ waiting: 0 })
    // Its bytes gone too: a deleted upload is served until the service reclaims its space.
    await service.local.reclaim()
    const gone = await service.clients.objects.getBytes(pack, SNAPSHOT_PROFILE).then(() => 'served', (err: { code?: string }) => err.code)
    expect(gone).toBe('ERR_CONTENT_NOT_FOUND')

    // The kept publish of 03:00 still holds the old records: its files come back from the new pack.
    await expectFiles(a, v3, join(root, 'got-03'), ['--at', '2026-03-01T03:00:00.000Z'])
    await expectDownloadAt(a, service, '2026-03-01T03:00:00.000Z', 's9.txt', v3.get('s9.txt'))
    const verified = await a.run(['verify', '--full'])
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)

    // A new device with the key restores the head, and then the kept publish of 03:00.
    const b = await contentDevice(root, service, 'b', RETENTION)
    await shareKey(a, b)
    await ok(b, ['restore'])
    const files = await b.run(['restore', '--files', '--to', join(root, 'b-files')])
    expect(files.code, files.stderr).toBe(0)
    for (const [name, hash] of v3) expect(sha(await readFile(join(root, 'b-files', 'notes', name)))).toBe(hash)
    await expectFiles(b, v3, join(root, 'b-03'), ['--at', '2026-03-01T03:00:00.000Z'])
    expect(v2.size).toBe(FILES)
  }, 600_000)

  it('killed once the new pack is stored, or once its records are, a rerun finishes, leaving no upload unnamed', async () => {
    for (const point of ['prune:repack-stored', 'prune:repack-recorded']) {
      const root = join(await useTempDir(), point.replace(':', '-'))
      const { a, service, v3, pack } = await mostlyDeadPack(root)
      const killed = await a.run(['prune'], { CIDSYNC_FAILPOINT: point })
      expect(killed.signal, `${point}: ${killed.stderr}`).toBe('SIGKILL')
      await expectFiles(a, v3, join(root, 'killed'))
      const rerun = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson
      expect(rerun.repacked, point).toMatchObject(point === 'prune:repack-stored' ? { packs: 1, made: 1 } : { packs: 0, waiting: 1 })
      // The rerun copied the same blobs in the same order: the same pack, so no second upload of them.
      const named = new Set(allRecordObjects(a))
      const sealed: string[] = []
      for await (const o of service.clients.objects.list()) if (o.name === 'cidsync-pack.sealed') sealed.push(o.cid)
      expect(sealed.filter(cid => !named.has(cid)), point).toEqual([])

      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
      await ok(a, ['forget'])
      await ok(a, ['prune'])
      expect(await service.clients.objects.has(pack), point).toBe(false)
      await service.local.reclaim()
      await expectFiles(a, v3, join(root, 'after'), ['--at', '2026-03-01T03:00:00.000Z'])
      const verified = await a.run(['verify', '--full'])
      expect(verified.code, `${point}: ${verified.stdout}${verified.stderr}`).toBe(0)
    }
  }, 600_000)

  it('leaves the packs whole while another process holds the state dir, and says which and what to do', async () => {
    const root = await useTempDir()
    const { a, pack } = await mostlyDeadPack(root)
    const lock = acquireLock(a.state)
    try {
      const busy = await ok(a, ['prune'])
      expect(busy.stdout).toContain('1 mostly unused content pack not rewritten')
      expect(busy.stdout).toContain(`another cidsync command (pid ${process.pid}) is using this state dir`)
      // A daemon says where its status listens.
      lock.update({ status: '127.0.0.1:9' })
      const json = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson
      expect(json.repacked).toMatchObject({ packs: 1, made: 0, skipped: expect.stringContaining('its scheduled prune ([retention] schedule') as unknown })
    } finally {
      lock.release()
    }
    expect([...recordObjects(a).values()]).toContain(pack)
  }, 300_000)
})
