import { describe, expect, it } from 'vitest'
import { isoWeek } from '../../src/retention/index.js'
import { bucketOf } from '../../src/retention/buckets.js'

const wall = (year: number, month: number, day: number, hour = 0): { year: number, month: number, day: number, hour: number, minute: number, second: number, millisecond: number } =>
  ({ year, month, day, hour, minute: 0, second: 0, millisecond: 0 })

describe('retention buckets', () => {
  it('numbers ISO weeks across year boundaries: a week belongs to the year of its Thursday', () => {
    // 2020 has 53 weeks: its last one runs into January 2021.
    expect(isoWeek(2020, 12, 28)).toEqual({ year: 2020, week: 53 })
    expect(isoWeek(2021, 1, 1)).toEqual({ year: 2020, week: 53 })
    expect(isoWeek(2021, 1, 3)).toEqual({ year: 2020, week: 53 })
    expect(isoWeek(2021, 1, 4)).toEqual({ year: 2021, week: 1 })
    // The other way: the last days of December in week 1 of the next year.
    expect(isoWeek(2024, 12, 29)).toEqual({ year: 2024, week: 52 })
    expect(isoWeek(2024, 12, 30)).toEqual({ year: 2025, week: 1 })
    expect(isoWeek(2025, 12, 31)).toEqual({ year: 2026, week: 1 })
    expect(isoWeek(2019, 12, 30)).toEqual({ year: 2020, week: 1 })
    expect(isoWeek(2024, 2, 29)).toEqual({ year: 2024, week: 9 })
  })

  it('gives every hour, day, week, month and year one number, the same for every moment in it', () => {
    expect(bucketOf('hourly', wall(2024, 2, 29, 13))).toBe(2024022913)
    expect(bucketOf('daily', wall(2024, 2, 29, 13))).toBe(20240229)
    expect(bucketOf('weekly', wall(2021, 1, 3))).toBe(202053)
    expect(bucketOf('monthly', wall(2024, 2, 29))).toBe(202402)
    expect(bucketOf('yearly', wall(2024, 2, 29))).toBe(2024)
    // Feb 29 is a day of its own, in February's bucket.
    expect(bucketOf('daily', wall(2024, 2, 29))).not.toBe(bucketOf('daily', wall(2024, 3, 1)))
    expect(bucketOf('monthly', wall(2024, 2, 29))).toBe(bucketOf('monthly', wall(2024, 2, 1)))
    // Newer buckets always have larger numbers, across every boundary.
    expect(bucketOf('weekly', wall(2021, 1, 4))).toBeGreaterThan(bucketOf('weekly', wall(2021, 1, 3)))
    expect(bucketOf('hourly', wall(2025, 1, 1, 0))).toBeGreaterThan(bucketOf('hourly', wall(2024, 12, 31, 23)))
  })
})
