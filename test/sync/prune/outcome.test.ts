import { describe, expect, it } from 'vitest'
import { forget, prune, SyncStore } from '../../../src/sync/index.js'
import type { RetentionPolicy } from '../../../src/retention/index.js'
import type { ServiceClients } from '../../../src/remote/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { handClock } from '../../helpers/clock.js'
import { repositoryOf, syncDevice, writeRows as write } from '../../helpers/sync-device.js'
import { pub } from '../v2-helpers.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const HOUR = 3_600_000
const keepLast = (n: number): RetentionPolicy => ({ keepLast: n, keepHourly: 0, keepDaily: 0, keepWeekly: 0, keepMonthly: 0, keepYearly: 0, keepWithin: undefined })

async function account (clients: ServiceClients): Promise<{ objects: number, bytes: number }> {
  let objects = 0
  let bytes = 0
  for await (const object of clients.objects.list()) { objects++; bytes += object.size }
  return { objects, bytes }
}

describe.skipIf(EXTERNAL)('forget and prune record what they did, for status', () => {
  it('keeps the last forget, the last prune and the last count in sync.sqlite; a dry run records only what a prune would free', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'prune-outcome', snapshot: 'deal = false\ncompact_after_deltas = 1\n' })
    const clock = handClock()
    for (let i = 0; i < 4; i++) {
      write(a, `f${i}.md`)
      await pub(a, clients, a.config, clock)
      clock.move(HOUR)
    }
    const repository = repositoryOf(a, clients)
    const records = repository.store.retention
    expect([records.lastForget(), records.lastPrune(), records.prunePlan()]).toEqual([null, null, null])

    // A dry run of forget changes nothing, and records nothing.
    const now = new Date(clock.now())
    await forget(repository, { policy: keepLast(1), now, timeZone: 'UTC', dryRun: true })
    expect(records.lastForget()).toBeNull()
    const forgot = await forget(repository, { policy: keepLast(1), now, timeZone: 'UTC' })
    expect(records.lastForget()).toEqual({ at: now.toISOString(), kept: 1, forgotten: 3, relinked: forgot.relinked })

    const held = await account(clients)
    // Past every object's upload (the service stamps them with the real time).
    const later = new Date(Date.now() + HOUR)
    const dry = await prune(repository, { marginMs: 0, now: later, dryRun: true })
    const wouldFree = dry.deleted.root + dry.deleted.content + dry.deleted.segment + dry.deleted.manifest
    expect(wouldFree).toBeGreaterThan(0)
    expect(records.lastPrune()).toBeNull()
    expect(records.prunePlan()).toEqual({ at: later.toISOString(), dryRun: true, held, wouldFree: { objects: wouldFree, bytes: dry.bytes }, young: 0, chainsHeld: 0 })

    const done = await prune(repository, { marginMs: 0, now: later })
    expect(done.bytes).toBe(dry.bytes)
    expect(records.lastPrune()).toEqual({ at: later.toISOString(), objects: wouldFree, bytes: dry.bytes, kinds: dry.deleted })
    // Right after a prune nothing more would go; the account holds what it listed less what went.
    const after = await account(clients)
    expect(after).toEqual({ objects: held.objects - wouldFree, bytes: held.bytes - dry.bytes })
    expect(records.prunePlan()).toEqual({ at: later.toISOString(), dryRun: false, held: after, wouldFree: { objects: 0, bytes: 0 }, young: 0, chainsHeld: 0 })

    // On disk: another process (a daemon after a restart, `cidsync status`) reads the same.
    const reopened = new SyncStore(a.config.stateDir)
    try {
      expect(reopened.retention.lastForget()).toEqual(records.lastForget())
      expect(reopened.retention.lastPrune()).toEqual(records.lastPrune())
      expect(reopened.retention.prunePlan()).toEqual(records.prunePlan())
    } finally {
      reopened.close()
    }
  })

  it('records what the service refused to delete: a partial prune is never recorded as a clean one', async () => {
    const { clients, local } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'prune-refused', snapshot: 'deal = false\ncompact_after_deltas = 1\n' })
    const clock = handClock()
    for (let i = 0; i < 4; i++) {
      write(a, `f${i}.md`)
      await pub(a, clients, a.config, clock)
      clock.move(HOUR)
    }
    const repository = repositoryOf(a, clients)
    await forget(repository, { policy: keepLast(1), now: new Date(clock.now()), timeZone: 'UTC' })
    const later = new Date(Date.now() + HOUR)
    const dry = await prune(repository, { marginMs: 0, now: later, dryRun: true })
    const wouldFree = dry.deleted.root + dry.deleted.content + dry.deleted.segment + dry.deleted.manifest
    expect(wouldFree).toBeGreaterThan(1)
    // The service refuses its first delete, as production does for an upload under a permanent plan.
    local?.faults.set('delete_file', { errorRate: 1, status: 400, times: 1 })
    const done = await prune(repository, { marginMs: 0, now: later })
    expect(done.refused).toMatchObject({ objects: 1, reasons: ['answered 400: injected fault'] })
    expect(done.refused?.sample).toHaveLength(1)
    const deleted = done.deleted.root + done.deleted.content + done.deleted.segment + done.deleted.manifest
    expect(deleted).toBe(wouldFree - 1)
    expect(done.bytes + (done.refused?.bytes ?? 0)).toBe(dry.bytes)
    expect(repository.store.retention.lastPrune()).toEqual({
      at: later.toISOString(), objects: deleted, bytes: done.bytes, kinds: done.deleted,
      refused: { objects: 1, bytes: done.refused?.bytes, reason: 'answered 400: injected fault' }
    })
    // The next prune asks again for the one refused, and deletes it now.
    const again = await prune(repository, { marginMs: 0, now: later })
    expect(again.refused?.objects).toBe(0)
    expect(again.bytes).toBe(done.refused?.bytes)
    expect(repository.store.retention.lastPrune()?.refused).toBeUndefined()
  })
})
