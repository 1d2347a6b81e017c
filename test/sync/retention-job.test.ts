import { describe, expect, it } from 'vitest'
import pino from 'pino'
import { RetentionJob } from '../../src/sync/retention-job.js'
import { EXTERNAL, serviceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { handClock } from '../helpers/clock.js'
import { repositoryOf, syncDevice, writeRows as write } from '../helpers/sync-device.js'
import { pub } from './v2-helpers.js'

const logger = pino({ level: 'silent' })
const A = 'aaaaaaaa-0000-4000-8000-000000000000'
// Appended under [snapshot] by the helper: the table after it is the device's [retention].
const POLICY = 'deal = false\ncompact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n'

describe.skipIf(EXTERNAL)('the daemon\'s forget and prune', () => {
  it('never runs while the last drill failed; then forgets, prunes, says what it did, and drills the kept history', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'retention-job', snapshot: POLICY })
    const clock = handClock()
    for (let i = 0; i < 3; i++) {
      write(a, `f${i}.md`)
      await pub(a, clients, a.config, clock)
      clock.move(3_600_000)
    }
    let failed = true
    let drills = 0
    const job = new RetentionJob({ repository: repositoryOf(a, clients), logger, drillFailed: () => failed, drill: async () => { drills++ } })
    await job.runNow()
    expect(job.status()).toMatchObject({ enabled: true, lastRun: null, skipped: expect.stringContaining('drill failed') })
    expect(drills).toBe(0)

    failed = false
    await job.runNow()
    const status = job.status()
    expect(status).toMatchObject({ enabled: true, skipped: null, lastError: null, lastRun: { kept: 1, forgotten: 2 } })
    expect(status.lastRun?.deleted).toBeGreaterThan(0)
    expect(drills).toBe(1)
    await job.stop()
  })
})
