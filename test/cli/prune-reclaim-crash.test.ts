import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok } from './content-devices.js'
import { deletedOf, embeddedDevice, expectKeptRestorable, packBytes, Versions, type PruneJson } from './retention-devices.js'

const RETENTION = 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n'
const BIG = 2 * 1024 * 1024

/** Each step of the embedded service's reclaim that a prune runs once it has deleted. */
const STEPS = ['service:reclaim-marked', 'service:reclaim-condemned', 'service:reclaim-swept', 'service:reclaim-pack-written', 'service:reclaim-pack-moved']

interface PruneRun extends PruneJson { reclaimed: { diskBytesFreed: number } | { error: string } | null }

describe('prune on the embedded service, killed during its reclaim', () => {
  it('keeps every kept publish restorable; the rerun, with nothing left to delete, gives the space back', async () => {
    const root = await useTempDir()
    const service = join(root, 'service')
    const a = await embeddedDevice(root, 'a', service, RETENTION)
    const versions = new Versions(a, { bigBytes: BIG })
    const scratch = join(root, 'scratch')
    await versions.publish()
    for (const point of STEPS) {
      await versions.publish()
      await ok(a, ['forget'])
      const before = await packBytes(service)
      const killed = await a.run(['prune'], { CIDSYNC_FAILPOINT: point })
      expect(killed.signal, `${point}: ${killed.stdout}${killed.stderr}`).toBe('SIGKILL')
      await expectKeptRestorable(a, versions, scratch, `killed at ${point}`)

      const rerun = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneRun
      // The killed run deleted and logged everything; the reclaim it cut short is finished now.
      expect(deletedOf(rerun), point).toBe(0)
      expect(rerun.reclaimed, point).not.toBeNull()
      expect(rerun.reclaimed, point).not.toHaveProperty('error')
      expect(await packBytes(service), point).toBeLessThan(before - BIG / 2)
      await expectKeptRestorable(a, versions, scratch, `rerun after ${point}`)
      // Nothing is due any more: a prune with nothing to delete leaves the service alone.
      expect((JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneRun).reclaimed, point).toBeNull()
    }
  }, 900_000)
})
