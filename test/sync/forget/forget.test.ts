import { describe, expect, it } from 'vitest'
import { forget } from '../../../src/sync/index.js'
import { ForgetContendedError } from '../../../src/errors.js'
import type { RetentionPolicy } from '../../../src/retention/index.js'
import type { ServiceClients } from '../../../src/remote/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { handClock } from '../../helpers/clock.js'
import { repositoryOf, syncDevice, writeRows as write, type SyncDevice } from '../../helpers/sync-device.js'
import { everything, historyOf, pub, readIndex, restoreInto, restorer } from '../v2-helpers.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const HOUR = 3_600_000
const keepLast = (n: number): RetentionPolicy => ({ keepLast: n, keepHourly: 0, keepDaily: 0, keepWeekly: 0, keepMonthly: 0, keepYearly: 0, keepWithin: undefined })

/** Five publishes an hour apart, each adding one file: `f0.md` ... `f4.md`. */
async function fiveHours (d: SyncDevice, clients: ServiceClients): Promise<{ cids: string[], clock: ReturnType<typeof handClock> }> {
  const clock = handClock()
  const cids: string[] = []
  for (let i = 0; i < 5; i++) {
    write(d, `f${i}.md`)
    cids.push((await pub(d, clients, d.config, clock)).cid)
    clock.move(HOUR)
  }
  return { cids, clock }
}

describe.skipIf(EXTERNAL)('forget: the policy applied to the chain', () => {
  it('keeps what the policy keeps, links them anew, and every kept publish still restores', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'forget-one' })
    const { cids, clock } = await fiveHours(a, clients)
    const before = await historyOf(a, clients)
    expect(before.map(e => e.cid)).toEqual([...cids].reverse())

    const dry = await forget(repositoryOf(a, clients), { policy: keepLast(2), now: new Date(clock.now()), timeZone: 'UTC', dryRun: true })
    expect(dry).toMatchObject({ kept: 2, forgotten: 3, head: null, relinked: 2 })
    expect((await historyOf(a, clients)).map(e => e.cid)).toEqual(before.map(e => e.cid))

    const done = await forget(repositoryOf(a, clients), { policy: keepLast(2), now: new Date(clock.now()), timeZone: 'UTC' })
    expect(done).toMatchObject({ kept: 2, forgotten: 3, relinked: 2 })
    const after = await historyOf(a, clients)
    // The two newest, same times and counts, new CIDs, the oldest kept one now the chain's start.
    expect(after.map(e => [e.at, e.entries])).toEqual(before.slice(0, 2).map(e => [e.at, e.entries]))
    expect(after[0]?.cid).toBe(done.head)
    // This device's base follows: status sees no other device's publish to merge.
    expect(a.store.base()).toBe(done.head)
    // And its last publish is named as the history lists it now.
    expect(a.store.lastPublished()?.cid).toBe(done.head)
    expect(after[1]?.previous).toBeNull()
    expect(after.map(e => e.cid)).not.toContain(cids[4])

    // Each kept publish restores, on a device that never saw the old chain.
    const r = await restorer(root, 'r', a, 'forget-one')
    const newest = await restoreInto(clients, r, 'forget-one')
    expect(newest.rows).toEqual(readIndex(a.config, everything))
    const older = await restoreInto(clients, r, 'forget-one', { cid: after[1]?.cid })
    expect(older.rows.map(row => (row as unknown[])[2]).sort()).toEqual(['f0.md', 'f1.md', 'f2.md', 'f3.md'])
  })

  it('another device takes the new chain at its next publish, without a rollback; a rerun forgets nothing more', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'forget-two' })
    const b = await restorer(root, 'b', a, 'forget-two')
    const { clock } = await fiveHours(a, clients)
    await restoreInto(clients, b, 'forget-two')
    const bDevice = await syncDevice(root, 'b', B, { namespace: 'forget-two' })
    const done = await forget(repositoryOf(a, clients), { policy: keepLast(3), now: new Date(clock.now()), timeZone: 'UTC' })
    expect(done.forgotten).toBe(2)

    write(bDevice, 'from-b.md')
    const published = await pub(bDevice, clients, bDevice.config, clock)
    expect(bDevice.store.rollback() ?? null).toBeNull()
    const history = await historyOf(a, clients)
    expect(history[0]?.cid).toBe(published.cid)
    expect(history[1]?.cid).toBe(done.head)
    expect(history).toHaveLength(4)
    // a's next publish takes b's rows; nothing of a's is lost.
    write(a, 'f5.md')
    await pub(a, clients, a.config, clock)
    expect(a.store.rollback() ?? null).toBeNull()
    expect(a.index.entries.list({}).map(e => e.path)).toContain('from-b.md')

    const again = await forget(repositoryOf(a, clients), { policy: keepLast(5), now: new Date(clock.now()), timeZone: 'UTC' })
    expect(again).toMatchObject({ forgotten: 0, head: null })
  })

  it('a clock that went back: the pointer\'s publish stays the head, and a restore has every file', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'forget-behind' })
    const { clock } = await fiveHours(a, clients)
    // The clock is set back a day; the next publish is stamped before every other one.
    clock.move(-24 * HOUR)
    write(a, 'after-the-jump.md')
    const last = await pub(a, clients, a.config, clock)
    clock.move(24 * HOUR)
    const done = await forget(repositoryOf(a, clients), { policy: keepLast(2), now: new Date(clock.now()), timeZone: 'UTC' })
    // The two newest by time and the pointer's are kept; the head is still the pointer's.
    expect(done.kept).toBe(3)
    // The device's last publish is the chain's, not the newest by time.
    expect(done.decisions[0]?.reasons).toEqual(['pointer', 'device'])
    expect(done.decisions[1]?.reasons).toEqual(['newest', 'last'])
    const after = await historyOf(a, clients)
    expect(after[0]?.cid).toBe(done.head)
    expect(after[0]?.publishedAs).toBe(last.cid)
    const r = await restorer(root, 'r', a, 'forget-behind')
    const restored = await restoreInto(clients, r, 'forget-behind')
    expect(restored.rows).toEqual(readIndex(a.config, everything))
  })

  it('with deals on, asks one for each manifest it seals anew, before the pointer moves', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'forget-deals', snapshot: 'deal = true\n' })
    const { clock } = await fiveHours(a, clients)
    const asked: string[] = []
    const counting = { ...clients, deals: { ...clients.deals, addCid: async (cid: string, o?: Parameters<ServiceClients['deals']['addCid']>[1]) => { asked.push(cid); await clients.deals.addCid(cid, o) } } } as ServiceClients
    const done = await forget(repositoryOf(a, counting), { policy: keepLast(2), now: new Date(clock.now()), timeZone: 'UTC' })
    expect(done.relinked).toBe(2)
    expect(asked).toHaveLength(2)
    expect(asked).toContain(done.head)
  })

  it('a publish made while it runs stops it, and the pointer keeps that publish', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'forget-three' })
    const { clock } = await fiveHours(a, clients)
    let reads = 0
    let sneaked: string | undefined
    // The service as another device meets it: its publish lands between the plan and the move.
    // The first read is the plan's (the check for a set-back pointer uses it too); the second, the move's.
    const racing = {
      ...clients,
      pointers: {
        current: async (...args: Parameters<ServiceClients['pointers']['current']>) => {
          if (++reads === 2) {
            write(a, 'sneaked.md')
            sneaked = (await pub(a, clients, a.config, clock)).cid
          }
          return await clients.pointers.current(...args)
        },
        put: clients.pointers.put
      }
    } as ServiceClients
    const err = await forget(repositoryOf(a, racing), { policy: keepLast(2), now: new Date(clock.now()), timeZone: 'UTC' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ForgetContendedError)
    expect((err as Error).message).toContain('run it again')
    // The publish here is this device's own, as its daemon's would be: the message cannot tell whose, and names both.
    expect((err as Error).message).toContain("this device's daemon's")
    expect((await clients.pointers.current('forget-three', 'mainnet')).snapshotCid).toBe(sneaked)
    expect(await historyOf(a, clients)).toHaveLength(6)
  })
})
