import { describe, expect, it } from 'vitest'
import { formatReasons, parseDuration, type RetentionPolicy } from '../../src/retention/index.js'

const policy: RetentionPolicy = { keepLast: 0, keepHourly: 0, keepDaily: 14, keepWeekly: 8, keepMonthly: 0, keepYearly: 0, keepWithin: parseDuration('48h') }

describe('the reasons a publish is kept, in words', () => {
  it('lists them in one order, the ones no policy takes away first, with keep_within\'s span', () => {
    expect(formatReasons(['weekly', 'daily', 'within', 'newest'], policy)).toBe('newest, within 48h, daily, weekly')
    expect(formatReasons(['yearly', 'marked', 'pointer', 'last', 'hourly', 'monthly'])).toBe('pointer, marked, last, hourly, monthly, yearly')
    expect(formatReasons(['within'])).toBe('within')
  })

  it('quotes each label so that one holding quotes reads as one label, not as rules or several labels', () => {
    // Another device's label: quotes and commas are allowed in one.
    const forged = 'before the move", daily, "after'
    expect(formatReasons(['marked'], policy, [forged])).toBe('marked "before the move\\", daily, \\"after"')
    expect(formatReasons(['marked', 'newest'], policy, ['a', 'b'])).toBe('newest, marked "a", "b"')
  })

  it('says nothing for a publish no rule keeps', () => {
    expect(formatReasons([], policy)).toBe('')
  })
})
