import { describe, expect, it } from 'vitest'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { contentDevice, ok, shareKey } from './content-devices.js'
import { deletedOf, history, sha, Versions, type PruneJson } from './retention-devices.js'

/** The default margin: a day. */
const RETENTION = 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\n'

describe.skipIf(EXTERNAL)('reading while a prune deletes', () => {
  it('a restore and a get of the kept history, run during the prune\'s deletes, never fail for it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    const versions = new Versions(a)
    for (let i = 0; i < 3; i++) await versions.publish()
    await ok(a, ['forget'])
    const [kept] = await history(a)
    const want = versions.latest()

    // The prune runs two days on: past the margin, so the forgotten publishes' objects go. Its
    // first delete is held a while; the readers start once it is, so they run among its deletes.
    service.local.faults.set('delete_file', { latencyMs: 1500, times: 1 })
    const pruning = a.run(['prune', '--json'], { CIDSYNC_TEST_CLOCK: new Date(Date.now() + 2 * 86_400_000).toISOString() })
    await until(() => service.local.faults.has('delete_file') ? undefined : true, 60_000, 'the prune\'s first delete')
    const files = [...want.keys()].map(f => `notes/${f}`)
    const [restored, got] = await Promise.all([
      a.run(['restore', '--files', '--to', join(root, 'restored')]),
      a.run(['get', ...files, '--to', join(root, 'got'), '--at', kept?.at ?? ''])
    ])
    const pruned = await pruning
    expect(pruned.code, pruned.stderr).toBe(0)
    expect(deletedOf(JSON.parse(pruned.stdout) as PruneJson)).toBeGreaterThan(0)
    expect(restored.code, restored.stderr).toBe(0)
    expect(got.code, got.stderr).toBe(0)
    for (const [name, hash] of want) {
      expect(sha(await readFile(join(root, 'restored', 'notes', name))), name).toBe(hash)
      expect(sha(await readFile(join(root, 'got', 'notes', name))), name).toBe(hash)
    }
  }, 300_000)

  it('with "0s", a reader of the chain a forget replaced fails when a prune deletes it, and a rerun reads the new chain', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', `${RETENTION}prune_margin = "0s"\n`)
    const versions = new Versions(a)
    for (let i = 0; i < 3; i++) await versions.publish()
    // What a restore that read the pointer before the forget would fetch: the old head.
    const [old] = await history(a)
    await ok(a, ['forget'])
    await ok(a, ['prune'])
    // A deleted upload is served until the service reclaims its space (the embedded one at once).
    await service.local.reclaim()
    // Another device, which never read that chain: the device that did keeps its manifests cached.
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    const stale = await b.run(['restore', '--cid', old?.cid ?? ''])
    expect(stale.code, stale.stderr).toBe(3)
    expect(stale.stderr).toContain('[ERR_CONTENT_NOT_FOUND]')
    const again = await b.run(['restore'])
    expect(again.code, again.stderr).toBe(0)
    const [kept] = await history(b)
    expect(versions.at(kept?.at ?? '')).toEqual(versions.latest())
  }, 300_000)
})
