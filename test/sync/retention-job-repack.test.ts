import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from '../cli/content-devices.js'
import { sha } from '../cli/retention-devices.js'
import { expectFiles, recordObjects, retentionJobOf } from '../cli/repack-devices.js'

/**
 * Two packs: P1 (ten files, eight deleted) and Q (twenty live files and one dead 26 kB one). The
 * first prune rewrites P1 and stops (what Q leaves unused is under 5% of all held). Once P1's dead
 * bytes are gone, Q's unused share passes 5% of what is held: the prune after the publish only
 * deletes, so Q waits for the next run.
 */
describe.skipIf(EXTERNAL)('the daemon\'s second prune after a repack', () => {
  it('the prune after the publish rewrites nothing itself: what the run rewrote is counted whole, and the next run rewrites the rest', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', '[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    const want = new Map<string, string>()
    for (let i = 0; i < 10; i++) {
      await writeFile(join(a.folder, `s${i}.txt`), randomBytes(20_000))
      want.set(`s${i}.txt`, sha(await readFile(join(a.folder, `s${i}.txt`))))
    }
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    const p1 = new Set(recordObjects(a).values())
    for (let i = 0; i < 20; i++) {
      await writeFile(join(a.folder, `q${i}.txt`), randomBytes(20_000))
      want.set(`q${i}.txt`, sha(await readFile(join(a.folder, `q${i}.txt`))))
    }
    await writeFile(join(a.folder, 'd.txt'), randomBytes(26_000))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    const q = [...new Set(recordObjects(a).values())].filter(o => !p1.has(o))
    expect(q.length).toBe(1)
    for (let i = 0; i < 8; i++) { await rm(join(a.folder, `s${i}.txt`)); want.delete(`s${i}.txt`) }
    await rm(join(a.folder, 'd.txt'))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })

    const { job, close } = retentionJobOf(a, service)
    try {
      await job.runNow()
      await job.stop()
      const status = job.status()
      // The second prune only deletes: Q, over the bound once P1 went, waits for the next run.
      const qNamed = [...recordObjects(a).values()].includes(q[0] as string)
      const qHeld = await service.clients.objects.has(q[0] as string)
      expect({ qNamed, qHeld }).toEqual({ qNamed: true, qHeld: true })
      // What status, the dashboard and /metrics show: one pack rewritten, nothing left waiting.
      expect({
        lastRunPacks: status.lastRun?.repacked?.packs,
        lastPrunePacks: status.lastPrune?.repacked?.packs,
        waiting: status.plan?.repack?.waiting
      }).toEqual({ lastRunPacks: 1, lastPrunePacks: 1, waiting: 0 })
      // The next run rewrites Q, and deletes it after its own publish.
      await job.runNow()
      await job.stop()
      expect({ qNamed: [...recordObjects(a).values()].includes(q[0] as string), qHeld: await service.clients.objects.has(q[0] as string) }).toEqual({ qNamed: false, qHeld: false })
    } finally {
      await close()
    }
    await expectFiles(a, want, join(root, 'after'))
  }, 300_000)
})
