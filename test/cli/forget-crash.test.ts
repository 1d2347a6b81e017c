import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from './content-devices.js'
import { deletedOf, expectKeptRestorable, history, retentionLeftovers, Versions, type ForgetJson, type PruneJson } from './retention-devices.js'

const RETENTION = 'compact_after_deltas = 1\n[retention]\nkeep_last = 2\nprune_margin = "0s"\n'

/** Each step of a forget, in order, and whether the pointer has moved once it is reached. */
const STEPS: ReadonlyArray<{ point: string, moved: boolean }> = [
  { point: 'forget:planned', moved: false },
  { point: 'forget:relink', moved: false },
  { point: 'forget:relinked', moved: false },
  { point: 'forget:checked', moved: false },
  { point: 'forget:pointer', moved: true },
  { point: 'forget:recorded', moved: true }
]

describe.skipIf(EXTERNAL)('forget killed at each step', () => {
  it('keeps every kept publish restorable; the rerun finishes; a prune after it loses nothing kept', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    const versions = new Versions(a)
    const scratch = join(root, 'scratch')
    await versions.publish()
    await versions.publish()
    for (const { point, moved } of STEPS) {
      // Two new publishes on top of the two kept: each forget has two to forget.
      await versions.publish()
      await versions.publish()
      const before = await history(a)
      expect(before, point).toHaveLength(4)

      const killed = await a.run(['forget'], { CIDSYNC_FAILPOINT: point })
      expect(killed.signal, `${point}: ${killed.stderr}`).toBe('SIGKILL')
      const after = await history(a)
      // Before the pointer moves the chain is as it was; after, it holds the two kept publishes.
      expect(after.map(r => r.at), point).toEqual(moved ? before.slice(0, 2).map(r => r.at) : before.map(r => r.at))
      // The kept history (the two newest) comes back whole, whichever chain the pointer names.
      await expectKeptRestorable(a, versions, scratch, `killed at ${point}`, 2)

      const rerun = JSON.parse((await ok(a, ['forget', '--json'])).stdout) as ForgetJson
      expect({ kept: rerun.kept, forgotten: rerun.forgotten }, point).toEqual({ kept: 2, forgotten: moved ? 0 : 2 })
      expect((await history(a)).map(r => r.at), point).toEqual(before.slice(0, 2).map(r => r.at))
      expect(await retentionLeftovers(a), point).toEqual([])

      // The prune deletes the forgotten publishes' objects; the kept ones still come back whole.
      const pruned = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson
      expect(deletedOf(pruned), point).toBeGreaterThan(0)
      expect(await expectKeptRestorable(a, versions, scratch, `pruned after ${point}`), point).toEqual(before.slice(0, 2).map(r => r.at))
    }
    // The device still publishes on top of what the forgets left, and that publish restores.
    await versions.publish()
    await expectKeptRestorable(a, versions, scratch, 'the publish after')
  }, 900_000)
})
