import { describe, expect, it } from 'vitest'
import { applyPolicy, parseDuration, type Decision, type Publish, type RetentionPolicy } from '../../src/retention/index.js'
import { InternalError } from '../../src/errors.js'

const NONE: RetentionPolicy = { keepLast: 0, keepHourly: 0, keepDaily: 0, keepWeekly: 0, keepMonthly: 0, keepYearly: 0, keepWithin: undefined }

function policy (rules: Partial<Omit<RetentionPolicy, 'keepWithin'>> & { within?: string }): RetentionPolicy {
  const { within, ...counts } = rules
  return { ...NONE, ...counts, keepWithin: within === undefined ? undefined : parseDuration(within) }
}

const at = (iso: string, device = 'a', marks: readonly string[] = []): Publish => ({ cid: `cid-${iso}-${device}`, time: new Date(iso), device, marks })

/** The injected clock: a present long after every publish unless a test says otherwise. */
const NOW = new Date('2030-01-01T00:00:00Z')

function run (publishes: readonly Publish[], p: RetentionPolicy, timeZone = 'UTC', now = NOW, pointer?: string): Array<Decision<Publish>> {
  return applyPolicy(publishes, p, { now, timeZone, pointer })
}

/** The kept publishes' times, newest first. */
const kept = (decisions: ReadonlyArray<Decision<Publish>>): string[] => decisions.filter(d => d.keep).map(d => d.publish.time.toISOString())
const reasonsOf = (decisions: ReadonlyArray<Decision<Publish>>, iso: string): readonly string[] | undefined =>
  decisions.find(d => d.publish.time.toISOString() === new Date(iso).toISOString())?.reasons

/** Every six hours from `from`, `count` times. */
function every6h (from: string, count: number): Publish[] {
  return Array.from({ length: count }, (_, i) => at(new Date(Date.parse(from) + i * 6 * 3_600_000).toISOString()))
}

describe('applying a retention policy', () => {
  it('keeps the newest publish of each of the last N days, and forgets the rest', () => {
    const decisions = run(every6h('2024-06-01T00:00:00Z', 20), policy({ keepDaily: 3 }))
    expect(kept(decisions)).toEqual(['2024-06-05T18:00:00.000Z', '2024-06-04T18:00:00.000Z', '2024-06-03T18:00:00.000Z'])
    expect(decisions.map(d => d.publish.time.toISOString())).toEqual(every6h('2024-06-01T00:00:00Z', 20).map(p => p.time.toISOString()).reverse())
    expect(decisions.filter(d => !d.keep).every(d => d.reasons.length === 0)).toBe(true)
    expect(reasonsOf(decisions, '2024-06-05T18:00:00Z')).toEqual(['newest', 'daily'])
    expect(reasonsOf(decisions, '2024-06-04T18:00:00Z')).toEqual(['daily'])
  })

  it('also keeps the oldest publish while a rule has buckets left to fill, as restic does', () => {
    const decisions = run(every6h('2024-06-01T00:00:00Z', 12), policy({ keepDaily: 10 }))
    expect(kept(decisions)).toEqual(['2024-06-03T18:00:00.000Z', '2024-06-02T18:00:00.000Z', '2024-06-01T18:00:00.000Z', '2024-06-01T00:00:00.000Z'])
    expect(reasonsOf(decisions, '2024-06-01T00:00:00Z')).toEqual(['daily'])
  })

  it('counts the last N publishes whenever they were made, and lists every rule that keeps one', () => {
    const decisions = run(every6h('2024-06-01T00:00:00Z', 8), policy({ keepLast: 2, keepDaily: 1, keepMonthly: 1 }))
    expect(kept(decisions)).toEqual(['2024-06-02T18:00:00.000Z', '2024-06-02T12:00:00.000Z'])
    expect(reasonsOf(decisions, '2024-06-02T18:00:00Z')).toEqual(['newest', 'last', 'daily', 'monthly'])
    expect(reasonsOf(decisions, '2024-06-02T12:00:00Z')).toEqual(['last'])
  })

  it('counts ISO weeks across a year\'s end, where months would split them', () => {
    // 28 December 2020 and 3 January 2021 are both in 2020's week 53; 4 January 2021 starts week 1.
    const publishes = [at('2020-12-21T10:00:00Z'), at('2020-12-28T10:00:00Z'), at('2021-01-03T10:00:00Z'), at('2021-01-04T10:00:00Z')]
    expect(kept(run(publishes, policy({ keepWeekly: 2 })))).toEqual(['2021-01-04T10:00:00.000Z', '2021-01-03T10:00:00.000Z'])
    expect(kept(run(publishes, policy({ keepMonthly: 2 })))).toEqual(['2021-01-04T10:00:00.000Z', '2020-12-28T10:00:00.000Z'])
    // 30 December 2024 is in 2025's first week.
    const next = [at('2024-12-29T10:00:00Z'), at('2024-12-30T10:00:00Z'), at('2025-01-05T10:00:00Z'), at('2025-01-06T10:00:00Z')]
    expect(kept(run(next, policy({ keepWeekly: 2 })))).toEqual(['2025-01-06T10:00:00.000Z', '2025-01-05T10:00:00.000Z'])
    expect(kept(run(next, policy({ keepYearly: 2 })))).toEqual(['2025-01-06T10:00:00.000Z', '2024-12-30T10:00:00.000Z'])
  })

  it('counts months and years, and 29 February as a day of its own', () => {
    const publishes = [at('2024-02-28T23:30:00Z'), at('2024-02-29T00:30:00Z'), at('2024-02-29T23:59:00Z'), at('2024-03-01T00:00:00Z')]
    const daily = run(publishes, policy({ keepDaily: 3 }))
    expect(kept(daily)).toEqual(['2024-03-01T00:00:00.000Z', '2024-02-29T23:59:00.000Z', '2024-02-28T23:30:00.000Z'])
    expect(kept(run(publishes, policy({ keepMonthly: 2 })))).toEqual(['2024-03-01T00:00:00.000Z', '2024-02-29T23:59:00.000Z'])
    const years = [at('2022-07-01T00:00:00Z'), at('2023-02-28T12:00:00Z'), at('2024-02-29T12:00:00Z'), at('2024-12-31T23:59:59Z')]
    expect(kept(run(years, policy({ keepYearly: 2 })))).toEqual(['2024-12-31T23:59:59.000Z', '2023-02-28T12:00:00.000Z'])
  })

  it('keeps everything within keep_within of the newest publish, the boundary itself included', () => {
    const newest = '2024-06-10T12:00:00.000Z'
    const publishes = [at(newest), at('2024-06-08T12:00:00.000Z'), at('2024-06-08T11:59:59.999Z'), at('2024-06-01T00:00:00.000Z')]
    const decisions = run(publishes, policy({ within: '48h' }))
    expect(kept(decisions)).toEqual([newest, '2024-06-08T12:00:00.000Z'])
    expect(reasonsOf(decisions, newest)).toEqual(['newest', 'within'])
    // A year back from a leap day is 28 February.
    const leap = [at('2024-02-29T12:00:00.000Z'), at('2023-02-28T12:00:00.000Z'), at('2023-02-28T11:59:59.999Z')]
    expect(kept(run(leap, policy({ within: '1y' })))).toEqual(['2024-02-29T12:00:00.000Z', '2023-02-28T12:00:00.000Z'])
  })

  it('counts keep_within back from the newest publish not after now: a clock running ahead moves nothing', () => {
    const now = new Date('2024-06-10T12:00:00Z')
    // Device c's clock runs a day ahead; the window still ends at a's publish of 10:00.
    const publishes = [at('2024-06-11T12:00:00Z', 'c'), at('2024-06-10T10:00:00Z'), at('2024-06-08T10:00:00Z', 'b'), at('2024-06-08T09:59:59Z', 'b')]
    const decisions = run(publishes, policy({ within: '48h' }), 'UTC', now)
    expect(kept(decisions)).toEqual(['2024-06-11T12:00:00.000Z', '2024-06-10T10:00:00.000Z', '2024-06-08T10:00:00.000Z'])
    expect(reasonsOf(decisions, '2024-06-11T12:00:00Z')).toEqual(['newest', 'within'])
    // With every publish ahead of now, the window counts back from now and keeps them all.
    expect(kept(run(publishes.slice(0, 1), policy({ within: '1h' }), 'UTC', new Date('2020-01-01T00:00:00Z')))).toHaveLength(1)
  })

  it('counts a calendar keep_within in the zone\'s days across a change of clocks', () => {
    // Berlin went to summer time on 31 March 2024: "1d" back from 14:00 CEST is 14:00 CET, 23 hours.
    const publishes = [at('2024-03-31T12:00:00Z'), at('2024-03-30T13:00:00Z'), at('2024-03-30T12:30:00Z')]
    expect(kept(run(publishes, policy({ within: '1d' }), 'Europe/Berlin'))).toEqual(['2024-03-31T12:00:00.000Z', '2024-03-30T13:00:00.000Z'])
    expect(kept(run(publishes, policy({ within: '24h' }), 'Europe/Berlin'))).toHaveLength(3)
  })

  it('buckets in the configured zone: an hour the clocks repeat is one hour, as on the wall', () => {
    // Berlin, 27 October 2024: 02:00-02:59 came twice, at 00:xx and 01:xx UTC.
    const publishes = [at('2024-10-26T20:00:00Z'), at('2024-10-27T00:30:00Z'), at('2024-10-27T01:30:00Z'), at('2024-10-27T02:30:00Z')]
    expect(kept(run(publishes, policy({ keepHourly: 3 }), 'Europe/Berlin'))).toEqual(['2024-10-27T02:30:00.000Z', '2024-10-27T01:30:00.000Z', '2024-10-26T20:00:00.000Z'])
    expect(kept(run(publishes, policy({ keepHourly: 3 }), 'UTC'))).toEqual(['2024-10-27T02:30:00.000Z', '2024-10-27T01:30:00.000Z', '2024-10-27T00:30:00.000Z'])
    // The short day of 31 March: 00:30 CET and 23:59 CEST are one day; 22:00 UTC is already 1 April.
    const spring = [at('2024-03-30T22:30:00Z'), at('2024-03-30T23:30:00Z'), at('2024-03-31T21:59:00Z'), at('2024-03-31T22:00:00Z')]
    expect(kept(run(spring, policy({ keepDaily: 2 }), 'Europe/Berlin'))).toEqual(['2024-03-31T22:00:00.000Z', '2024-03-31T21:59:00.000Z'])
    expect(kept(run(spring, policy({ keepDaily: 2 }), 'UTC'))).toEqual(['2024-03-31T22:00:00.000Z', '2024-03-30T23:30:00.000Z'])
  })

  it('buckets the same instants differently in two time zones', () => {
    // New York: 30 May 23:00, then 1 June twice. Tokyo: 1 June twice, then 2 June.
    const publishes = [at('2024-06-01T03:00:00Z'), at('2024-06-01T14:30:00Z'), at('2024-06-01T15:30:00Z')]
    expect(kept(run(publishes, policy({ keepDaily: 2 }), 'America/New_York'))).toEqual(['2024-06-01T15:30:00.000Z', '2024-06-01T03:00:00.000Z'])
    expect(kept(run(publishes, policy({ keepDaily: 2 }), 'Asia/Tokyo'))).toEqual(['2024-06-01T15:30:00.000Z', '2024-06-01T14:30:00.000Z'])
  })

  it('answers the same for publishes from three devices in any order', () => {
    const publishes: Publish[] = []
    for (let hour = 0; hour < 24 * 10; hour += 5) {
      for (const [device, skew] of [['a', 0], ['b', 7], ['c', 41]] as const) {
        publishes.push(at(new Date(Date.parse('2024-05-01T00:00:00Z') + hour * 3_600_000 + skew * 60_000).toISOString(), device))
      }
    }
    const p = policy({ keepLast: 4, keepHourly: 6, keepDaily: 5, within: '12h' })
    const expected = run(publishes, p, 'Europe/Berlin')
    expect(expected.map(d => d.publish.time.getTime())).toEqual(publishes.map(p => p.time.getTime()).sort((x, y) => y - x))
    let seed = 7
    const random = (): number => { seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31; return seed / 2 ** 31 }
    for (let round = 0; round < 5; round++) {
      const shuffled = [...publishes]
      for (let i = shuffled.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1))
        ;[shuffled[i], shuffled[j]] = [shuffled[j] as Publish, shuffled[i] as Publish]
      }
      expect(run(shuffled, p, 'Europe/Berlin')).toEqual(expected)
    }
    expect(new Set(expected.filter(d => d.reasons.includes('daily')).map(d => d.publish.device))).toEqual(new Set(['c']))
  })

  it('breaks a tie of one instant by CID, whatever order the publishes came in', () => {
    const time = new Date('2024-06-01T12:00:00Z')
    const a: Publish = { cid: 'bafy-a', time, device: 'a', marks: [] }
    const b: Publish = { cid: 'bafy-b', time, device: 'b', marks: [] }
    for (const order of [[a, b], [b, a]]) {
      const decisions = run(order, policy({ keepLast: 1 }))
      expect(decisions.map(d => [d.publish.cid, d.keep, d.reasons])).toEqual([['bafy-b', true, ['newest', 'last']], ['bafy-a', false, []]])
    }
  })

  it('always keeps a marked publish, and a mark changes no count', () => {
    const publishes = [at('2023-01-01T00:00:00Z', 'a', ['before the move']), ...every6h('2024-06-01T00:00:00Z', 8)]
    publishes[4] = at(publishes[4]?.time.toISOString() ?? '', 'b', ['tax'])
    const decisions = run(publishes, policy({ keepLast: 2 }))
    expect(kept(decisions)).toEqual(['2024-06-02T18:00:00.000Z', '2024-06-02T12:00:00.000Z', '2024-06-01T18:00:00.000Z', '2023-01-01T00:00:00.000Z'])
    expect(reasonsOf(decisions, '2024-06-01T18:00:00Z')).toEqual(['marked'])
    expect(reasonsOf(decisions, '2023-01-01T00:00:00Z')).toEqual(['marked'])
  })

  it('always keeps the newest publish, and the pointer\'s though another device\'s clock ran ahead', () => {
    const publishes = [at('2024-06-01T10:00:00Z', 'a'), at('2024-06-01T11:00:00Z', 'b'), at('2024-06-01T12:00:00Z', 'c')]
    const pointer = publishes[1]?.cid
    const decisions = run(publishes, policy({ keepYearly: 1 }), 'UTC', NOW, pointer)
    expect(decisions.map(d => d.reasons)).toEqual([['newest', 'yearly'], ['pointer'], []])
    for (const p of [policy({ keepLast: 1 }), policy({ within: '1s' }), policy({ keepMonthly: 1 })]) {
      expect(run(publishes, p)[0]?.reasons).toContain('newest')
    }
  })

  it('answers nothing for no publishes, and refuses an empty policy and bad input', () => {
    expect(run([], policy({ keepDaily: 1 }))).toEqual([])
    expect(() => run([at('2024-06-01T00:00:00Z')], NONE)).toThrow(InternalError)
    expect(() => run([at('2024-06-01T00:00:00Z')], policy({ within: '0s' }))).toThrow(InternalError)
    expect(() => run([at('2024-06-01T00:00:00Z'), at('2024-06-01T00:00:00Z')], policy({ keepDaily: 1 }))).toThrow(/given twice/)
    expect(() => run([{ ...at('2024-06-01T00:00:00Z'), time: new Date(NaN) }], policy({ keepDaily: 1 }))).toThrow(/invalid time/)
    expect(() => run([], policy({ keepDaily: 1 }), 'Mars/Olympus')).toThrow(InternalError)
    expect(() => run([], policy({ keepDaily: -1, keepLast: 1 }))).toThrow(InternalError)
    expect(() => run([], policy({ keepDaily: 1 }), 'UTC', new Date(NaN))).toThrow(InternalError)
  })

  it('answers a year of publishes every 15 minutes from three devices in one pass', () => {
    const start = Date.parse('2024-01-01T00:00:00Z')
    const publishes: Publish[] = []
    for (let i = 0; i < 35_040; i++) {
      const device = ['a', 'b', 'c'][i % 3] ?? 'a'
      publishes.push({ cid: `cid-${i}`, time: new Date(start + i * 15 * 60_000), device, marks: i === 1000 ? ['january'] : [] })
    }
    // Newest last in the input, out of order within each day.
    publishes.reverse()
    const p = policy({ within: '48h', keepHourly: 24, keepDaily: 14, keepWeekly: 8, keepMonthly: 24, keepYearly: 10 })
    const decisions = run(publishes, p, 'Europe/Berlin', new Date('2025-01-01T00:00:00Z'))
    expect(decisions).toHaveLength(35_040)
    const count = (reason: string): number => decisions.filter(d => d.reasons.includes(reason as never)).length
    // 48 hours of 15 minutes, the boundary included.
    expect(count('within')).toBe(193)
    expect([count('hourly'), count('daily'), count('weekly'), count('marked')]).toEqual([24, 14, 8, 1])
    // A year less a day, all in Berlin's 2024: the newest of each month, and the oldest while buckets are left.
    expect(count('yearly')).toBe(2)
    expect(count('monthly')).toBe(13)
    const keptCount = decisions.filter(d => d.keep).length
    expect(keptCount).toBeGreaterThan(193)
    expect(keptCount).toBeLessThan(250)
  }, 60_000)
})

describe('each device\'s last publish, when given', () => {
  it('keeps the ones given, with the reason `device`, and counts them in no rule', () => {
    const publishes = [at('2029-12-31T10:00:00Z', 'a'), at('2029-12-30T10:00:00Z', 'b'), at('2029-12-29T10:00:00Z', 'b'), at('2029-12-28T10:00:00Z', 'c')]
    const deviceHeads = new Set([publishes[0], publishes[1], publishes[3]].map(p => p?.cid ?? ''))
    const decisions = applyPolicy(publishes, policy({ keepLast: 1 }), { now: NOW, timeZone: 'UTC', deviceHeads })
    expect(kept(decisions)).toEqual(['2029-12-31T10:00:00.000Z', '2029-12-30T10:00:00.000Z', '2029-12-28T10:00:00.000Z'])
    expect(reasonsOf(decisions, '2029-12-31T10:00:00.000Z')).toEqual(['newest', 'device', 'last'])
    expect(reasonsOf(decisions, '2029-12-30T10:00:00.000Z')).toEqual(['device'])
    expect(kept(applyPolicy(publishes, policy({ keepLast: 1 }), { now: NOW, timeZone: 'UTC' }))).toEqual(['2029-12-31T10:00:00.000Z'])
  })
})
