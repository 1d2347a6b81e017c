import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { runCli } from '../helpers/cli.js'
import { pruneListNetwork, SNAPSHOT_PROFILE } from '../../src/sync/index.js'
import { HoldingProxy } from '../helpers/holding-proxy.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within } from '../helpers/wait.js'
import { listedNow, pruneHeldAfterRecheck, through } from './prune-holds.js'
import { servicePointer } from './retention-devices.js'
import { contentDevice, contentObjects, ok, type ContentDevice } from './content-devices.js'


/** The objects of `d`'s content records of files of `size` bytes. */
function objectsOfSize (d: ContentDevice, size: number): string[] {
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true })
  try {
    const rows = db.prepare('SELECT objects FROM content WHERE size = ?').pluck().all(size) as string[]
    return rows.flatMap(row => (JSON.parse(row) as Array<[string, number, number]>).map(([object]) => object))
  } finally {
    db.close()
  }
}

describe.skipIf(EXTERNAL)('prune: a publish landing between its pointer check and its deletes', () => {
  // The default margin too: it counts from when an object was stored, and these are old.
  // The publish finds the prune's list once its pointer moved, and stores those objects again.
  it.each(['0s', '1d'])('never loses the content that publish names again (prune_margin %s)', async (margin) => {
    const { root, service, b, bytes, proxy, pruning } = await pruneHeldAfterRecheck(margin)
    // Meanwhile b adds the same bytes back (a revert, a copy) and publishes.
    await writeFile(join(b.folder, 'copy.bin'), bytes)
    await ok(b, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    proxy.letGo()
    const pruned = await pruning
    expect(pruned.code, pruned.stderr).not.toBeNull()
    // Every object b's newest publish names is still the account's.
    const listed = await listedNow(service)
    expect([...contentObjects(b)].filter(o => !listed.has(o))).toEqual([])
    // As a service that deletes at once does: the bytes go with the listing's rows.
    await service.local.reclaim()

    // b's publish is the newest: every file it names must come back from the service.
    await rm(join(b.folder, 'copy.bin'))
    const got = await b.run(['get', 'notes/copy.bin', '--to', join(root, 'back')])
    expect(got.code, got.stderr).toBe(0)
    expect((await readFile(join(root, 'back', 'notes', 'copy.bin'))).equals(bytes)).toBe(true)
    const verified = await runCli(['verify', '--full', '--content', '--config', b.config], { env: b.env, timeoutMs: 120_000 })
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)
  }, 600_000)

  it('never deletes an upload made within prune_margin, though an older upload of the same object goes', async () => {
    const { root, service, a, bytes, proxy, pruning } = await pruneHeldAfterRecheck('1d')
    // Another device uploads one of doc.bin's objects again, now: the account lists it twice.
    const object = objectsOfSize(a, bytes.length)[0] as string
    const path = join(root, 'again.obj')
    await service.clients.objects.getFile(object, SNAPSHOT_PROFILE, path)
    await service.clients.objects.put(path, SNAPSHOT_PROFILE, { expectedCid: object })
    proxy.letGo()
    expect((await pruning).code).toBe(0)
    expect((await listedNow(service)).has(object)).toBe(true)
  }, 600_000)
})

describe.skipIf(EXTERNAL)('prune: two at once', () => {
  it('says what it deleted, not what another prune deleted first', async () => {
    const { a, proxy, pruning } = await pruneHeldAfterRecheck('0s', ['prune', '--json'])
    // Another prune (another device, or a daemon's beside the command) runs to its end meanwhile.
    const first = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as { deleted: Record<string, number>, bytes: number }
    expect(first.bytes).toBeGreaterThan(0)
    proxy.letGo()
    const second = await pruning
    expect(second.code, second.stderr).toBe(0)
    const said = JSON.parse(second.stdout) as { deleted: Record<string, number>, bytes: number }
    // Nothing was left for it to delete: the service deleted nothing of its asking.
    expect({ deleted: Object.values(said.deleted).reduce((x, y) => x + y, 0), bytes: said.bytes }).toEqual({ deleted: 0, bytes: 0 })
  }, 600_000)
})

/** What `d` logged for its mirrors, of one kind. */
function replicaLog (d: ContentDevice, kind: 'object' | 'delete'): string[] {
  const db = new Database(join(d.state, 'sync.sqlite'), { readonly: true })
  try {
    return db.prepare('SELECT cid FROM replica_log WHERE kind = ? ORDER BY seq').pluck().all(kind) as string[]
  } finally {
    db.close()
  }
}

describe.skipIf(EXTERNAL)('prune: a service failing mid-batch', () => {
  it('logs for the mirrors every object the service deleted, so that they delete it too', async () => {
    const { service, a, proxy, pruning } = await pruneHeldAfterRecheck('0s')
    // Once the first delete is done, the service fails every delete.
    const second = proxy.holdWhen((request, before) => request.method === 'DELETE' && before.some(p => p.method === 'DELETE'))
    proxy.letGo()
    await within(second, 60_000, 'the second delete')
    service.local.faults.set('delete_file', { errorRate: 1, status: 500 })
    proxy.letGo()
    expect((await pruning).code).not.toBe(0)
    service.local.faults.clear()
    // The next prune finishes the work.
    await ok(a, ['prune'])
    const listed = await listedNow(service)
    const deleted = new Set(replicaLog(a, 'delete'))
    const goneUnlogged = replicaLog(a, 'object').filter(cid => !listed.has(cid) && !deleted.has(cid))
    expect(goneUnlogged).toEqual([])
  }, 600_000)
})

describe.skipIf(EXTERNAL)('prune: a pointer set back', () => {
  it('refuses, and never deletes what this device\'s own later publish names', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), faults: { dag_import: { errorRate: 1, status: 404 } } })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    const bytes = randomBytes(3 * 1024 * 1024 + 9)
    await writeFile(join(a.folder, 'doc.bin'), bytes)
    await writeFile(join(a.folder, 'other.txt'), 'stays')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    await rm(join(a.folder, 'doc.bin'))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    await ok(a, ['forget'])
    const before = servicePointer(join(root, 'service'))
    // The same bytes back (a revert): its record still names the objects, so nothing is sent.
    await writeFile(join(a.folder, 'doc.bin'), bytes)
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })

    // The service is restored from a backup made before that publish.
    servicePointer(join(root, 'service'), before)
    const listed = await listedNow(service)
    for (const args of [['prune'], ['prune', '--dry-run']]) {
      const refused = await a.run(args)
      expect(refused.code, refused.stderr).toBe(4)
      expect(refused.stderr).toContain('ERR_RETENTION_POINTER_SET_BACK')
      expect(refused.stderr).toContain('cidsync snapshot')
    }
    expect(await listedNow(service)).toEqual(listed)
    await service.local.reclaim()
    // The device publishes on top of what it knows, as it does when it finds the pointer set back.
    await writeFile(join(a.folder, 'more.txt'), 'after the restore')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
    await rm(join(a.folder, 'doc.bin'))
    const got = await a.run(['get', 'notes/doc.bin', '--to', join(root, 'back')])
    expect(got.code, got.stderr).toBe(0)
    expect((await readFile(join(root, 'back', 'notes', 'doc.bin'))).equals(bytes)).toBe(true)
  }, 600_000)
})

describe.skipIf(EXTERNAL)('prune: an upload the service will not delete', () => {
  it('deletes the rest, and says which it could not', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), faults: { dag_import: { errorRate: 1, status: 404 } } })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    for (const [i, at] of ['2026-03-01T01:00:00.000Z', '2026-03-01T02:00:00.000Z', '2026-03-01T03:00:00.000Z'].entries()) {
      await writeFile(join(a.folder, 'doc.bin'), randomBytes(3 * 1024 * 1024 + i))
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: at })
    }
    await ok(a, ['forget'])
    const dry = JSON.parse((await ok(a, ['prune', '--dry-run', '--json'])).stdout) as { deleted: Record<string, number> }
    const dead = Object.values(dry.deleted).reduce((x, y) => x + y, 0)
    expect(dead).toBeGreaterThan(2)
    const before = (await listedNow(service)).size

    // As production answers for an upload under a permanent plan: this one upload is never deleted.
    const proxy = await HoldingProxy.start(service.local.url)
    await through(a, service.local.url, proxy.url)
    let kept: string | undefined
    proxy.refuseWhen(request => {
      if (request.method !== 'DELETE') return false
      kept ??= request.search
      return request.search === kept
    }, 400, { error: 'files under a permanent plan\u001b[2J\ncannot be deleted' })
    const pruned = await a.run(['prune'])
    expect(pruned.code).not.toBe(0)
    expect(pruned.stderr).toContain('refused to delete 1 object')
    expect(pruned.stderr).toContain('permanent plan\\x1b[2J\\x0acannot be deleted')
    // The service lists one object more: the prune's list of what it deletes, for publishes at the same time.
    const list = (await service.clients.pointers.current('content-faults', pruneListNetwork('mainnet'))).snapshotCid
    const after = await listedNow(service)
    expect([after.has(list), before - (after.size - 1)]).toEqual([true, dead - 1])

    // Asked again, it is refused again: --json says so, and so does the record status shows.
    const again = await a.run(['prune', '--json'])
    expect(again.code).not.toBe(0)
    const said = JSON.parse(again.stdout) as { deleted: Record<string, number>, refused: { objects: number, sample: string[], reasons: string[] } }
    expect(Object.values(said.deleted).reduce((x, y) => x + y, 0)).toBe(0)
    expect({ objects: said.refused.objects, sample: said.refused.sample.length }).toEqual({ objects: 1, sample: 1 })
    expect(said.refused.reasons[0]).toContain('permanent plan')
    // No daemon runs: status shows what the state dir records.
    const status = await a.run(['status'])
    expect(status.stdout).toContain('the service refused to delete 1 object')
  }, 600_000)
})
