import { describe, expect, it } from 'vitest'
import { describePolicy, isEmptyPolicy, parseDuration, type RetentionPolicy } from '../../src/retention/index.js'

const NONE: RetentionPolicy = { keepLast: 0, keepHourly: 0, keepDaily: 0, keepWeekly: 0, keepMonthly: 0, keepYearly: 0, keepWithin: undefined }

describe('a retention policy', () => {
  it('is empty when no rule keeps anything, a zero keep_within included', () => {
    expect(isEmptyPolicy(NONE)).toBe(true)
    expect(isEmptyPolicy({ ...NONE, keepWithin: parseDuration('0s') })).toBe(true)
    expect(isEmptyPolicy({ ...NONE, keepWithin: parseDuration('1s') })).toBe(false)
    expect(isEmptyPolicy({ ...NONE, keepYearly: 1 })).toBe(false)
  })

  it('says in words what it keeps', () => {
    expect(describePolicy({ ...NONE, keepLast: 3, keepHourly: 24, keepDaily: 14, keepWithin: parseDuration('48h') }))
      .toBe('keep the last 3, 24 hourly, 14 daily publishes, and all within 48h of the newest')
    expect(describePolicy({ ...NONE, keepWithin: parseDuration('1y2m') })).toBe('keep all within 1y2m of the newest')
    expect(describePolicy({ ...NONE, keepMonthly: 12 })).toBe('keep 12 monthly publishes')
    expect(describePolicy({ ...NONE, keepLast: 1 })).toBe('keep the last 1 publish')
    expect(describePolicy({ ...NONE, keepDaily: 1, keepWeekly: 1 })).toBe('keep 1 daily, 1 weekly publishes')
    expect(describePolicy(NONE)).toBe('keep only the newest publish')
  })
})
