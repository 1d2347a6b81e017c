import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PRUNE_LIST_ENGINE, pruneListNetwork, SNAPSHOT_PROFILE } from '../../src/sync/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from './content-devices.js'
import type { LocalService } from './v2-cli.js'

const NAMESPACE = 'content-faults'

async function listPointer (service: LocalService): Promise<string> {
  return (await service.clients.pointers.current(NAMESPACE, pruneListNetwork('mainnet'))).snapshotCid
}

async function listed (service: LocalService): Promise<Set<string>> {
  const cids = new Set<string>()
  for await (const object of service.clients.objects.list()) cids.add(object.cid)
  return cids
}

describe.skipIf(EXTERNAL)('the prune list: what a prune deletes, announced to publishes', () => {
  it('is announced by a prune that deletes content, and replaces the one before it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    const lists: string[] = []
    for (const round of [1, 2]) {
      for (const [i, at] of [`2026-03-0${round}T01:00:00.000Z`, `2026-03-0${round}T02:00:00.000Z`].entries()) {
        await writeFile(join(a.folder, 'doc.bin'), randomBytes(300_000 + i))
        await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: at })
      }
      await ok(a, ['forget'])
      await ok(a, ['prune'])
      lists.push(await listPointer(service))
    }
    const [first, second] = lists as [string, string]
    expect(first).not.toBe(second)
    const now = await listed(service)
    // The newest stays for the publishes still to read it; the one it replaced is deleted.
    expect([now.has(first), now.has(second)]).toEqual([false, true])
  }, 600_000)

  it('does not stop the same bytes coming back on the device that stored them: sent again, in one part too', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    // Parts of 64 chunks: the file is one part, whose upload the device notes while it sends it.
    const ONE_PART = { CIDSYNC_TEST_PART_CHUNKS: '64' }
    const bytes = randomBytes(3 * 1024 * 1024 + 1)
    await writeFile(join(a.folder, 'doc.bin'), bytes)
    await ok(a, ['snapshot'], { ...ONE_PART, CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    await rm(join(a.folder, 'doc.bin'))
    await ok(a, ['snapshot'], { ...ONE_PART, CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    await ok(a, ['forget'])
    await ok(a, ['prune'])
    await service.local.reclaim()
    // The same bytes back: the prune deleted their object, so it is sent again.
    await writeFile(join(a.folder, 'doc.bin'), bytes)
    await ok(a, ['snapshot'], { ...ONE_PART, CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    await rm(join(a.folder, 'doc.bin'))
    const got = await a.run(['get', 'notes/doc.bin', '--to', join(root, 'back')])
    expect(got.code, got.stderr).toBe(0)
    expect((await readFile(join(root, 'back', 'notes', 'doc.bin'))).equals(bytes)).toBe(true)
  }, 600_000)

  it('is ignored, said, when the service names one that cannot be used: the publish goes on', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a')
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(5000))
    await ok(a, ['snapshot'])
    // Anyone who can write the account's pointers can name any object: not a list sealed under our key.
    const junk = join(root, 'junk.bin')
    await writeFile(junk, randomBytes(2000))
    const { cid } = await service.clients.objects.put(junk, SNAPSHOT_PROFILE)
    await service.clients.pointers.put({ snapshotCid: cid, engine: PRUNE_LIST_ENGINE, namespace: NAMESPACE, network: pruneListNetwork('mainnet') })
    await writeFile(join(a.folder, 'more.bin'), randomBytes(5000))
    const published = await ok(a, ['snapshot'])
    expect(published.stderr).toContain('the prune list the service names cannot be used')
    // Read once: the next publish does not fetch it again.
    await writeFile(join(a.folder, 'third.bin'), randomBytes(5000))
    expect((await ok(a, ['snapshot'])).stderr).not.toContain('prune list')
  }, 600_000)
})
