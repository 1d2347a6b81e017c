import { describe, expect, it, vi } from 'vitest'

// One object a delete batch: many batches from a small history. Set before the prune's module reads it.
vi.hoisted(() => { process.env.CIDSYNC_TEST_PRUNE_BATCH = '1' })

const { forget, prune } = await import('../../../src/sync/index.js')
const { EXTERNAL, serviceUnderTest } = await import('../../helpers/service.js')
const { useTempDir } = await import('../../helpers/temp-dir.js')
const { handClock } = await import('../../helpers/clock.js')
const { repositoryOf, syncDevice, writeRows: write } = await import('../../helpers/sync-device.js')
const { pub } = await import('../v2-helpers.js')

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const HOUR = 3_600_000
const DAY = 24 * HOUR
const LISTING = '/api/user/files_uploaded'

describe.skipIf(EXTERNAL)('prune: the service\'s listing is walked once, not once a delete batch', () => {
  it('reads the listing whole a bounded number of times, and only its first page for each batch', async () => {
    const { clients, local } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'prune-walks', snapshot: 'deal = false\ncompact_after_deltas = 1\n' })
    const clock = handClock()
    for (let i = 0; i < 6; i++) {
      write(a, `f${i}.md`)
      await pub(a, clients, a.config, clock)
      clock.move(HOUR)
    }
    await forget(repositoryOf(a, clients), { policy: { keepLast: 1, keepHourly: 0, keepDaily: 0, keepWeekly: 0, keepMonthly: 0, keepYearly: 0, keepWithin: undefined }, now: new Date(clock.now()), timeZone: 'UTC' })
    const pages = (): number => (local?.requestLog() ?? []).filter(r => r.method === 'GET' && r.path === LISTING).length
    let start = pages()
    for await (const _ of clients.objects.list()) { /* one walk */ }
    const oneWalk = pages() - start
    const later = new Date(clock.now() + 2 * DAY)
    const dry = await prune(repositoryOf(a, clients), { marginMs: DAY, now: later, dryRun: true })

    start = pages()
    const done = await prune(repositoryOf(a, clients), { marginMs: DAY, now: later })
    const read = pages() - start
    const batches = Object.values(done.deleted).reduce((sum, n) => sum + n, 0)
    expect(done.deleted).toEqual(dry.deleted)
    expect(batches).toBeGreaterThanOrEqual(10)
    expect(oneWalk).toBeGreaterThanOrEqual(4)
    // The walk that finds what is dead, the margin's look-up of the replaced chain, the list's own: at most
    // three whole walks. Each batch reads the head alone, for uploads made since.
    expect(read - batches).toBeLessThanOrEqual(3 * oneWalk)
  })
})
