import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PRUNE_LIST_ENGINE, pruneListNetwork, SNAPSHOT_PROFILE } from '../../src/sync/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ENGINE, FORMAT_VERSION, seal } from '../../src/snapshot/index.js'
import { listedNow, pruneHeldAfterRecheck } from './prune-holds.js'
import { servicePointer } from './retention-devices.js'
import { contentDevice, contentObjects, ok, shareKey, storedThenDeleted } from './content-devices.js'


describe.skipIf(EXTERNAL)('attack: the prune list replaced before a late publish reads it', () => {
  it('a publish killed in its name step, resumed after a second prune, still stores again what the first prune deleted', async () => {
    const { root, service, a, b, bytes, pruning, proxy } = await pruneHeldAfterRecheck('0s')
    const firstList = (await service.clients.pointers.current('content-faults', pruneListNetwork('mainnet'))).snapshotCid

    // b names doc.bin's objects again; its publish moves the pointer and is killed at its name step.
    await writeFile(join(b.folder, 'copy.bin'), bytes)
    const killed = await b.run(['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z', CIDSYNC_FAILPOINT: 'publish:name' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    proxy.letGo()
    expect((await pruning).code).toBe(0)
    const named = contentObjects(b)

    // A week later, a's next prune deletes other dead content, and so replaces the list.
    await writeFile(join(a.folder, 'z.bin'), randomBytes(2 * 1024 * 1024 + 7))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
    await rm(join(a.folder, 'z.bin'))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T05:00:00.000Z' })
    await ok(a, ['forget'])
    await ok(a, ['prune'])
    const secondList = (await service.clients.pointers.current('content-faults', pruneListNetwork('mainnet'))).snapshotCid
    expect(secondList).not.toBe(firstList)

    // b resumes its publish: its name step runs the check again, against the list the service names now.
    const resumed = await b.run(['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T06:00:00.000Z' })
    const listed = await listedNow(service)
    const missing = [...named].filter(o => !listed.has(o))
    await service.local.reclaim()
    await rm(join(b.folder, 'copy.bin'))
    const got = await b.run(['get', 'notes/copy.bin', '--to', join(root, 'back')])
    // Expected: either the resumed publish fails, or it stored copy.bin again. Never exit 0 with it gone.
    expect({ resumed: resumed.code, missing, got: got.code }, got.stderr).toEqual({ resumed: 0, missing: [], got: 0 })
  }, 600_000)
})

describe.skipIf(EXTERNAL)('attack: a side pointer naming an object a publish cannot fetch', () => {
  it.each([
    ['gone', 2000, true],
    ['over the bound', 22 * 1024 * 1024, false]
  ])('naming one %s does not stop every later publish for good', async (_what, size, gone) => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', '[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(5000))
    await ok(a, ['snapshot'])
    const junk = join(root, 'junk.bin')
    await writeFile(junk, randomBytes(size))
    const { cid } = await service.clients.objects.put(junk, SNAPSHOT_PROFILE)
    await service.clients.pointers.put({ snapshotCid: cid, engine: PRUNE_LIST_ENGINE, namespace: 'content-faults', network: pruneListNetwork('mainnet') })
    if (gone) {
      await service.clients.objects.deleteMany([cid])
      await service.local.reclaim()
    }
    const codes: Array<number | null> = []
    let said = ''
    for (let i = 0; i < 3; i++) {
      await writeFile(join(a.folder, `more-${i}.bin`), randomBytes(5000))
      const published = await a.run(['snapshot'])
      codes.push(published.code)
      said = published.stderr
    }
    // A prune finds nothing to delete: it announces no list, so nothing moves the side pointer.
    const pruned = await a.run(['prune'])
    await writeFile(join(a.folder, 'after-prune.bin'), randomBytes(5000))
    const after = await a.run(['snapshot'])
    expect({ codes, after: after.code }, said + '\n---\n' + pruned.stderr + '\n---\n' + after.stderr).toEqual({ codes: [0, 0, 0], after: 0 })
  }, 600_000)
})

describe.skipIf(EXTERNAL)('attack: a list this cidsync cannot read is taken as naming nothing', () => {
  it('a list from a newer cidsync (body version 2), sealed under the key, stops the publish, saying to upgrade, never exit 0', async () => {
    const { root, service, a, b, bytes, doc, pruning, proxy } = await pruneHeldAfterRecheck('0s')

    // As a newer cidsync's prune would announce it: the same objects, under the key, in a body of version 2.
    const objects = [...doc]
    const path = join(root, 'v2.sealed')
    await seal({
      path,
      header: { format: FORMAT_VERSION, engine: ENGINE, kind: 'prune-list', compression: 'br', device: 'newer', objects: objects.length },
      body: { bytes: Buffer.from(JSON.stringify({ version: 2, device: 'newer', objects, reason: 'a field this one does not know' })) },
      encryption: 'aes-256-gcm',
      stateDir: a.state
    } as Parameters<typeof seal>[0])
    const { cid } = await service.clients.objects.put(path, SNAPSHOT_PROFILE)
    await service.clients.pointers.put({ snapshotCid: cid, engine: PRUNE_LIST_ENGINE, namespace: 'content-faults', network: pruneListNetwork('mainnet') })

    await writeFile(join(b.folder, 'copy.bin'), bytes)
    // It cannot tell what that prune deletes: it stops, saying to upgrade, never exit 0.
    const published = await b.run(['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    proxy.letGo()
    await pruning
    expect(published.code, published.stderr).toBe(4)
    expect(published.stderr).toContain('ERR_PRUNE_LIST_NEWER')
  }, 600_000)
})


describe.skipIf(EXTERNAL)('attack: a pointer set back behind another device\'s publish', () => {
  it('a prune on the pruning device never deletes what the other device\'s hidden publish names', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), faults: { dag_import: { errorRate: 1, status: 404 } } })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    const c = await contentDevice(root, service, 'c')
    await shareKey(a, c)
    const bytes = randomBytes(3 * 1024 * 1024 + 11)
    await storedThenDeleted(a, bytes, async () => await ok(c, ['restore']))
    await ok(a, ['forget'])
    const before = servicePointer(join(root, 'service'))
    // c names the same bytes again: a's record is taken, nothing sent. Its publish moves the pointer.
    await writeFile(join(c.folder, 'copy.bin'), bytes)
    await ok(c, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    // The service is restored from a backup made before c's publish.
    servicePointer(join(root, 'service'), before)
    const pruned = await a.run(['prune'])
    await service.local.reclaim()
    // c publishes again on top of the pointer it finds (set back), as it does.
    await writeFile(join(c.folder, 'more.txt'), 'after the restore')
    const again = await c.run(['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
    const listed = await listedNow(service)
    const missing = [...contentObjects(c)].filter(o => !listed.has(o))
    await rm(join(c.folder, 'copy.bin'))
    const got = await c.run(['get', 'notes/copy.bin', '--to', join(root, 'back')])
    // Expected: the prune refuses or keeps c's content, or c's publish stores it again; never exit 0 with it gone.
    expect({ pruned: pruned.code, again: again.code, missing, got: got.code }, pruned.stderr + '\n---\n' + again.stderr + '\n---\n' + got.stderr).toEqual({ pruned: pruned.code, again: 0, missing: [], got: 0 })
  }, 600_000)
})

describe.skipIf(EXTERNAL)('attack: a device offline across a forget and prune publishes on its old chain', () => {
  it('its next publish names only segments the service still holds', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', '[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    await writeFile(join(b.folder, 'f1.txt'), 'one')
    await ok(b, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    await writeFile(join(a.folder, 'a1.txt'), 'a one')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    await writeFile(join(b.folder, 'f2.txt'), 'two')
    await ok(b, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    await writeFile(join(a.folder, 'a2.txt'), 'a two')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
    await ok(a, ['forget'])
    await ok(a, ['prune'])
    await service.local.reclaim()
    // b was offline through all of it: it publishes on top of what it knew.
    await writeFile(join(b.folder, 'f3.txt'), 'three')
    const published = await b.run(['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T05:00:00.000Z' })
    const verified = await b.run(['verify', '--full', '--content'])
    const c = await contentDevice(root, service, 'c')
    await shareKey(a, c)
    const restored = await c.run(['restore'])
    expect({ published: published.code, verified: verified.code, restored: restored.code }, published.stderr + '\n---\n' + verified.stdout + verified.stderr + '\n---\n' + restored.stderr).toEqual({ published: 0, verified: 0, restored: 0 })
  }, 600_000)
})

