import { expect } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { localServiceUnderTest } from '../helpers/service.js'
import { contentDevice, ok, type ContentDevice } from './content-devices.js'
import { sha } from './retention-devices.js'
import { loadConfig } from '../../src/config/index.js'
import pino from 'pino'
import { indexPath, openIndex, readDeviceId } from '../../src/index/index.js'
import { downloadFile, publish, Repository, selectRows, SyncStore } from '../../src/sync/index.js'
import { RetentionJob } from '../../src/sync/retention-job.js'

/**
 * Devices whose content packs a prune rewrites (docs/retention.md, "Repack"), for the repack tests
 * of the CLI and the daemon: ten small files in one pack, most of them rewritten since.
 */
export const RETENTION = '[retention]\nkeep_last = 2\nprune_margin = "0s"\n'
export const FILES = 10

export interface Repacked { packs: number, blobs: number, bytes: number, freed: number, made: number, waiting: number, skipped?: string }
export interface PruneJson { deleted: { content: number }, repacked?: Repacked }

/** The object this device's record names for each live small file, by the file's CID. */
export function recordObjects (d: ContentDevice): Map<string, string> {
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true })
  try {
    const rows = db.prepare('SELECT c.cid, c.objects FROM content c WHERE c.size < 100000 AND c.cid IN (SELECT cid FROM entries WHERE deleted = 0)').all() as Array<{ cid: string, objects: string }>
    return new Map(rows.map(r => [r.cid, (JSON.parse(r.objects) as Array<[string]>)[0]?.[0] ?? '']))
  } finally {
    db.close()
  }
}

/** Writes each of `names` anew; answers every file's SHA-256 by name. */
export async function rewrite (d: ContentDevice, names: readonly number[], held: Map<string, string>): Promise<Map<string, string>> {
  for (const i of names) await writeFile(join(d.folder, `s${i}.txt`), randomBytes(20_000 + i))
  const now = new Map(held)
  for (const i of names) now.set(`s${i}.txt`, sha(await readFile(join(d.folder, `s${i}.txt`))))
  return now
}

/** Every object any record of this device's index names. */
export function allRecordObjects (d: ContentDevice): string[] {
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true })
  try {
    return (db.prepare('SELECT objects FROM content').pluck().all() as string[]).flatMap(o => (JSON.parse(o) as Array<[string]>).map(p => p[0]))
  } finally {
    db.close()
  }
}

export async function expectFiles (d: ContentDevice, want: Map<string, string>, to: string, extra: string[] = []): Promise<void> {
  await rm(to, { recursive: true, force: true })
  const got = await d.run(['get', ...[...want.keys()].map(n => `notes/${n}`), '--to', to, ...extra])
  expect(got.code, `${d.name}: get ${extra.join(' ')}: ${got.stderr}`).toBe(0)
  for (const [name, hash] of want) expect(sha(await readFile(join(to, 'notes', name))), `${name} ${extra.join(' ')}`).toBe(hash)
}

/**
 * The dashboard's download of a past version (`downloadFile`): the past publish's record names the
 * deleted pack; with this device's index beside it, the newer record brings the file back.
 */
export async function expectDownloadAt (d: ContentDevice, service: Awaited<ReturnType<typeof localServiceUnderTest>>, at: string, name: string, hash: string | undefined): Promise<void> {
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
 * A time within the third publish of {@link mostlyDeadPack} (at 03:00), before the next (04:00). Its
 * clock runs on from 03:00 as the command starts: the publish is stamped a little after, never at it.
 */
export const AT_THIRD = '2026-03-01T03:30:00.000Z'

/**
 * Ten small files in one pack, eight of them rewritten twice: once the first publish is forgotten,
 * the first pack holds two live files of ten. Answers the device, the files of each publish, and the pack.
 */
export async function mostlyDeadPack (root: string): Promise<{ a: ContentDevice, service: Awaited<ReturnType<typeof localServiceUnderTest>>, v3: Map<string, string>, v2: Map<string, string>, pack: string }> {
  const service = await localServiceUnderTest({ dir: join(root, 'service') })
  const a = await contentDevice(root, service, 'a', RETENTION)
  const { v2, v3, pack } = await forgetFirstOfThree(a, FILES)
  return { a, service, v2, v3, pack }
}

/**
 * `files` small files in one pack, published; eight of them rewritten and published twice; the
 * first publish forgotten. Answers the files of each publish, and the first pack.
 */
export async function forgetFirstOfThree (a: ContentDevice, files: number): Promise<{ v1: Map<string, string>, v2: Map<string, string>, v3: Map<string, string>, pack: string }> {
  const all = Array.from({ length: files }, (_, i) => i)
  const v1 = await rewrite(a, all, new Map())
  await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
  const pack = [...new Set(recordObjects(a).values())]
  expect(pack.length).toBe(1)
  const v2 = await rewrite(a, all.slice(0, 8), v1)
  await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
  const v3 = await rewrite(a, all.slice(0, 8), v2)
  await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
  await ok(a, ['forget'])
  return { v1, v2, v3, pack: pack[0] as string }
}

/** The mostly dead pack rewritten, published and deleted by the prune after, its bytes given back. */
export async function repackedAndDeleted (root: string): Promise<Awaited<ReturnType<typeof mostlyDeadPack>>> {
  const made = await mostlyDeadPack(root)
  const { a, service, pack } = made
  await ok(a, ['prune'])
  await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
  await ok(a, ['forget'])
  await ok(a, ['prune'])
  expect(await service.clients.objects.has(pack)).toBe(false)
  await service.local.reclaim()
  return made
}

/**
 * The daemon's forget and prune over `d`'s state dir in this process, with the repack and a
 * publish after it, as the runner wires them; `close` lets go of what it opened.
 */
export function retentionJobOf (d: ContentDevice, service: Awaited<ReturnType<typeof localServiceUnderTest>>, onPublish: () => void = () => {}): { job: RetentionJob, close: () => Promise<void> } {
  const logger = pino({ level: 'silent' })
  const index = openIndex(indexPath(d.state))
  const store = new SyncStore(d.state)
  const repository = new Repository(loadConfig({ configPath: d.config, env: d.env }), service.clients, { store })
  const deviceId = readDeviceId(d.state) as string
  const job = new RetentionJob({
    repository, logger, drillFailed: () => false, drill: async () => {},
    repack: { index, deviceId, hostname: d.name },
    publish: async () => { onPublish(); return await publish({ index, repository, logger, deviceId }, {}) }
  })
  return {
    job,
    close: async () => {
      await job.stop()
      store.close()
      index.close()
      await repository.close()
    }
  }
}
