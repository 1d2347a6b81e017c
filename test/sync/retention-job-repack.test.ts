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
 * Two packs: P1 (ten files, eight deleted) and Q (twenty live files and one dead 26 kB one). Once
 * P1's dead bytes are gone, Q's unused share passes 5% of what is held: the first prune counts what
 * is held after its rewrite, so it rewrites Q too. The prune after the publish only deletes, and
 * the next run finds nothing to rewrite.
 */
describe.skipIf(EXTERNAL)('the daemon\'s second prune after a repack', () => {
  it('the prune after the publish rewrites nothing itself: the run rewrote every pack at once, and the next run rewrites none', async () => {
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
      // P1 and Q rewritten, and both deleted by the prune after the publish.
      const gone = async (pack: string): Promise<unknown> => ({ named: [...recordObjects(a).values()].includes(pack), held: await service.clients.objects.has(pack) })
      for (const pack of [...p1, ...q]) expect(await gone(pack), pack).toEqual({ named: false, held: false })
      // What status, the dashboard and /metrics show: two packs rewritten, nothing left waiting.
      expect({
        lastRunPacks: status.lastRun?.repacked?.packs,
        lastPrunePacks: status.lastPrune?.repacked?.packs,
        waiting: status.plan?.repack?.waiting
      }).toEqual({ lastRunPacks: 2, lastPrunePacks: 2, waiting: 0 })
      // The next run has nothing to rewrite.
      const packs = new Set(recordObjects(a).values())
      await job.runNow()
      await job.stop()
      expect(new Set(recordObjects(a).values())).toEqual(packs)
    } finally {
      await close()
    }
    await expectFiles(a, want, join(root, 'after'))
  }, 300_000)
})
