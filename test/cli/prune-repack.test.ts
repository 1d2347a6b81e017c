import { describe, expect, it } from 'vitest'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'
import { sha } from './retention-devices.js'
import { SNAPSHOT_PROFILE } from '../../src/sync/read/index.js'
import { acquireLock } from '../../src/state-lock/index.js'
import { allRecordObjects, expectDownloadAt, expectFiles, FILES, mostlyDeadPack, recordObjects, RETENTION, type PruneJson, AT_THIRD } from './repack-devices.js'
describe.skipIf(EXTERNAL)('a prune repacks mostly dead packs', () => {
  it('copies the live files of a mostly dead pack into a new one; the prune after a publish deletes the old; every kept publish and a new device restore', async () => {
    const root = await useTempDir()
    const { a, service, v2, v3, pack } = await mostlyDeadPack(root)
    const dry = JSON.parse((await ok(a, ['prune', '--dry-run', '--json'])).stdout) as PruneJson
    expect(dry.repacked).toMatchObject({ packs: 1, blobs: 2, made: 0 })
    // Read into slabs of 4 KiB: each blob copied spans several.
    const pruned = JSON.parse((await ok(a, ['prune', '--json'], { CIDSYNC_TEST_REPACK_SLAB: '4096' })).stdout) as PruneJson
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
    await expectFiles(a, v3, join(root, 'got-03'), ['--at', AT_THIRD])
    await expectDownloadAt(a, service, AT_THIRD, 's9.txt', v3.get('s9.txt'))
    const verified = await a.run(['verify', '--full'])
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)

    // A new device with the key restores the head, and then the kept publish of 03:00.
    const b = await contentDevice(root, service, 'b', RETENTION)
    await shareKey(a, b)
    await ok(b, ['restore'])
    const files = await b.run(['restore', '--files', '--to', join(root, 'b-files')])
    expect(files.code, files.stderr).toBe(0)
    for (const [name, hash] of v3) expect(sha(await readFile(join(root, 'b-files', 'notes', name)))).toBe(hash)
    await expectFiles(b, v3, join(root, 'b-03'), ['--at', AT_THIRD])
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
      await expectFiles(a, v3, join(root, 'after'), ['--at', AT_THIRD])
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
      expect(json.repacked).toMatchObject({ packs: 1, made: 0, skipped: expect.stringMatching(/its scheduled prune rewrites them at \d{4}-\d\d-\d\dT[\d:.]+Z \(\[retention\] schedule = "17 5 \* \* 0"\)/) as unknown })
    } finally {
      lock.release()
    }
    expect([...recordObjects(a).values()]).toContain(pack)
    // Rewritten once the state dir is free; then, held again, a pack that only waits for a publish says nothing of the holder.
    expect((JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson).repacked).toMatchObject({ packs: 1, made: 1 })
    const again = acquireLock(a.state)
    try {
      const waiting = (JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson).repacked
      expect(waiting).toMatchObject({ packs: 0, made: 0, waiting: 1 })
      expect(waiting).not.toHaveProperty('skipped')
    } finally {
      again.release()
    }
  }, 300_000)
})
