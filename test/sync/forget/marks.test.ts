import { describe, expect, it } from 'vitest'
import { forget, publish } from '../../../src/sync/index.js'
import { NothingFoundError } from '../../../src/errors.js'
import type { RetentionPolicy } from '../../../src/retention/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { handClock } from '../../helpers/clock.js'
import { repositoryOf, syncDevice, syncOf, writeRows as write } from '../../helpers/sync-device.js'
import { historyOf, logger, pub } from '../v2-helpers.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const HOUR = 3_600_000
const keepLast = (n: number): RetentionPolicy => ({ keepLast: n, keepHourly: 0, keepDaily: 0, keepWeekly: 0, keepMonthly: 0, keepYearly: 0, keepWithin: undefined })

describe.skipIf(EXTERNAL)('marks: a labelled publish', () => {
  it('is made even when nothing changed, is kept by every forget, and keeps its label when linked anew', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'marks-one' })
    const clock = handClock()
    write(a, 'f0.md')
    const first = await pub(a, clients, a.config, clock)
    clock.move(HOUR)
    // Nothing changed: a plain publish is skipped, a labelled one is made.
    const marked = await publish({ ...syncOf(a, clients, logger), clock }, { marks: ['before the move'] })
    expect(marked).toMatchObject({ skipped: false, marks: ['before the move'] })
    expect(marked.cid).not.toBe(first.cid)
    for (let i = 1; i <= 4; i++) {
      clock.move(HOUR)
      write(a, `f${i}.md`)
      await pub(a, clients, a.config, clock)
    }
    const before = await historyOf(a, clients)
    expect(before.find(e => e.cid === marked.cid)?.marks).toEqual(['before the move'])

    const done = await forget(repositoryOf(a, clients), { policy: keepLast(1), now: new Date(clock.now()), timeZone: 'UTC' })
    const keptMarked = done.decisions.find(d => d.publish.cid === marked.cid)
    expect(keptMarked).toMatchObject({ keep: true, reasons: ['marked'] })
    expect(done).toMatchObject({ kept: 2, forgotten: 4 })
    const after = await historyOf(a, clients)
    expect(after).toHaveLength(2)
    // Linked anew (its previous changed), with its label and its time as they were.
    expect(after[1]).toMatchObject({ at: before.find(e => e.cid === marked.cid)?.at, marks: ['before the move'], publishedAs: marked.cid })

    // A second forget keeps it again, under its new CID.
    clock.move(HOUR)
    write(a, 'f5.md')
    await pub(a, clients, a.config, clock)
    const again = await forget(repositoryOf(a, clients), { policy: keepLast(1), now: new Date(clock.now()), timeZone: 'UTC' })
    expect(again.decisions.filter(d => d.keep).map(d => d.reasons)).toEqual([['newest', 'pointer', 'device', 'last'], ['marked']])
  })

  it('a job cut short finishes first; the labelled publish follows it, on top', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'marks-two' })
    write(a, 'f0.md')
    await pub(a, clients)
    write(a, 'f1.md')
    // A job left at its first step, as a crash leaves it: it carries no labels.
    const cut = a.store.start(a.store.base() ?? null)
    expect(cut.marks).toEqual([])
    const marked = await publish(syncOf(a, clients, logger), { marks: ['one', 'two'] })
    expect(marked.marks).toEqual(['one', 'two'])
    const history = await historyOf(a, clients)
    expect(history.map(e => e.marks ?? [])).toEqual([['one', 'two'], [], []])
    expect(a.store.current()).toBeUndefined()
  })

  it('a labelled job cut short keeps its labels when it resumes', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'marks-three' })
    write(a, 'f0.md')
    await pub(a, clients)
    a.store.start(a.store.base() ?? null, ['resumed'])
    // The next plain publish (the daemon's, after a restart) resumes the labelled job.
    const resumed = await pub(a, clients)
    expect((await historyOf(a, clients))[0]).toMatchObject({ cid: resumed.cid, marks: ['resumed'] })
  })

  it('forget --unmark takes a label off, then the policy decides; a label no publish carries is refused', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'marks-four' })
    const clock = handClock()
    write(a, 'f0.md')
    await publish({ ...syncOf(a, clients, logger), clock }, { marks: ['old', 'also'] })
    clock.move(HOUR)
    write(a, 'f1.md')
    await publish({ ...syncOf(a, clients, logger), clock }, { marks: ['new'] })
    const before = await historyOf(a, clients)
    const repository = repositoryOf(a, clients)
    const now = new Date(clock.now())

    await expect(forget(repository, { policy: keepLast(1), now, timeZone: 'UTC', unmark: ['olld'] })).rejects.toThrow(NothingFoundError)
    expect((await historyOf(a, clients)).map(e => e.cid)).toEqual(before.map(e => e.cid))

    // Nothing forgotten (the other label keeps it), yet the label comes off: both sealed again.
    const partly = await forget(repository, { policy: keepLast(1), now, timeZone: 'UTC', unmark: ['old', 'new'] })
    expect(partly).toMatchObject({ forgotten: 0, unmarked: 2, relinked: 2 })
    expect((await historyOf(a, clients)).map(e => e.marks ?? [])).toEqual([[], ['also']])

    const gone = await forget(repositoryOf(a, clients), { policy: keepLast(1), now, timeZone: 'UTC', unmark: ['also'] })
    expect(gone).toMatchObject({ forgotten: 1, unmarked: 1 })
    const after = await historyOf(a, clients)
    expect(after).toHaveLength(1)
    expect(after[0]).toMatchObject({ at: before[0]?.at, previous: null })
  })
})
