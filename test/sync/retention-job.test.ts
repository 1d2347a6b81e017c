import { describe, expect, it } from 'vitest'
import pino from 'pino'
import { RetentionJob } from '../../src/sync/retention-job.js'
import { EXTERNAL, serviceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { handClock } from '../helpers/clock.js'
import { repositoryOf, syncDevice, writeRows as write } from '../helpers/sync-device.js'
import { pub } from './v2-helpers.js'
import { until } from '../helpers/wait.js'
import { join } from 'node:path'
import { expectFiles, mostlyDeadPack, retentionJobOf } from '../cli/repack-devices.js'

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
    // What it did is what sync.sqlite recorded: the CLI's runs would show the same way.
    expect(status.lastForget).toMatchObject({ kept: 1, forgotten: 2 })
    expect(status.lastPrune?.objects).toBe(status.lastRun?.deleted)
    expect(status.plan).toMatchObject({ dryRun: false, wouldFree: { objects: 0, bytes: 0 } })
    expect(status.planDueAt).toBeNull()
    await job.stop()
  })

  it('counts again what a prune would free once prune_margin has passed, and says when it will', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const policy = POLICY.replace('prune_margin = "0s"', 'prune_margin = "3s"')
    const a = await syncDevice(root, 'a', A, { namespace: 'retention-count', snapshot: policy })
    const clock = handClock()
    for (let i = 0; i < 3; i++) {
      write(a, `f${i}.md`)
      await pub(a, clients, a.config, clock)
      clock.move(3_600_000)
    }
    const components = { repository: repositoryOf(a, clients), logger, drillFailed: () => false, drill: async () => {} }
    const before = new RetentionJob(components)
    await before.runNow()
    // The chain it just replaced is within the margin: kept whole, and counted again after it.
    const first = before.status()
    await before.stop()
    expect(first.plan).toMatchObject({ dryRun: false, chainsHeld: 1 })
    expect(Date.parse(first.planDueAt ?? '')).toBeGreaterThanOrEqual(Date.parse(first.plan?.at ?? '') + 3000)
    // A daemon started again reads when from sync.sqlite.
    const job = new RetentionJob(components)
    try {
      job.start()
      expect(job.status().planDueAt).toBe(first.planDueAt)
      const counted = await until(() => job.status().plan?.dryRun === true ? job.status() : undefined, 30_000, 'a count once the margin passed')
      expect(counted.plan?.chainsHeld).toBe(0)
      expect(counted.plan?.wouldFree.objects).toBeGreaterThan(0)
      expect(counted.plan?.wouldFree.bytes).toBeGreaterThan(0)
      expect(counted.planError).toBeNull()
      // Nothing is held back any more: no further count is due.
      expect(counted.planDueAt).toBeNull()
    } finally {
      await job.stop()
    }
  })

  it('with nothing left to delete, still reclaims when the embedded service says one is due (a reclaim cut short)', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'retention-job-reclaim', snapshot: POLICY })
    write(a, 'f.md')
    await pub(a, clients, a.config, handClock())
    let due = false
    let reclaims = 0
    const job = new RetentionJob({ repository: repositoryOf(a, clients), logger, drillFailed: () => false, drill: async () => {}, reclaim: async () => { reclaims++ }, reclaimDue: async () => due })
    await job.runNow()
    expect(job.status().lastRun).toMatchObject({ forgotten: 0, deleted: 0 })
    expect(reclaims).toBe(0)
    due = true
    await job.runNow()
    expect(reclaims).toBe(1)
    await job.stop()
  })

  it('refuses a pointer set back behind this device\'s own publish: says so in status and the log, deletes nothing, and runs once it is healed', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'retention-set-back', snapshot: POLICY })
    const clock = handClock()
    const cids: string[] = []
    for (let i = 0; i < 3; i++) {
      write(a, `f${i}.md`)
      cids.push((await pub(a, clients, a.config, clock)).cid)
      clock.move(3_600_000)
    }
    // The service is restored from a backup made before the last publish.
    await clients.pointers.put({ snapshotCid: cids[1] as string, engine: 'cidsync-sqlite/2', namespace: 'retention-set-back', network: 'mainnet' })
    const listed = async (): Promise<string[]> => { const all: string[] = []; for await (const o of clients.objects.list()) all.push(o.cid); return all.sort() }
    const before = await listed()
    const logged: string[] = []
    const log = pino({ level: 'error' }, { write: (line: string) => { logged.push(line) } })
    const job = new RetentionJob({ repository: repositoryOf(a, clients), logger: log, drillFailed: () => false, drill: async () => {} })
    try {
      await expect(job.runNow()).rejects.toMatchObject({ code: 'ERR_RETENTION_POINTER_SET_BACK' })
      const status = job.status()
      expect(status.lastRun).toBeNull()
      expect(status.lastError).toMatchObject({ code: 'ERR_RETENTION_POINTER_SET_BACK', message: expect.stringContaining('cidsync snapshot') })
      expect(logged.join('')).toContain('ERR_RETENTION_POINTER_SET_BACK')
      expect(await listed()).toEqual(before)

      // The device publishes on top, as its daemon does when it finds the pointer set back.
      await pub(a, clients, a.config, clock)
      await job.runNow()
      expect(job.status()).toMatchObject({ lastError: null, lastRun: { kept: 1 } })
    } finally {
      await job.stop()
    }
  })

  it('after a repack, publishes and prunes again: the rewritten pack goes in the same run, and status says what it did', async () => {
    const root = await useTempDir()
    const { a, service, v3, pack } = await mostlyDeadPack(root)
    let published = 0
    const { job, close } = retentionJobOf(a, service, () => { published++ })
    try {
      await job.runNow()
      await job.stop()
      const status = job.status()
      expect({ published, repacked: status.lastRun?.repacked?.packs, stored: await service.clients.objects.has(pack) }).toEqual({ published: 1, repacked: 1, stored: false })
      // Recorded as one prune: the old pack among its deletes, nothing left waiting for a publish.
      expect(status.lastPrune?.repacked?.packs).toBe(1)
      expect(status.lastPrune?.kinds.content).toBeGreaterThanOrEqual(1)
      expect(status.plan?.repack?.waiting).toBe(0)
    } finally {
      await close()
    }
    await service.local.reclaim()
    await expectFiles(a, v3, join(root, 'after'))
  }, 300_000)
})
