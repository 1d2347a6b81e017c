import type { WallClock } from './time-zone.js'

/** The rules that count buckets of time, each keeping the newest publish of its last N buckets. */
export type BucketRule = 'hourly' | 'daily' | 'weekly' | 'monthly' | 'yearly'

export const BUCKET_RULES: readonly BucketRule[] = ['hourly', 'daily', 'weekly', 'monthly', 'yearly']

const DAY_MS = 86_400_000

/** The ISO 8601 week of a date: weeks start on Monday, and week 1 holds the year's first Thursday. */
export function isoWeek (year: number, month: number, day: number): { year: number, week: number } {
  const date = Date.UTC(year, month - 1, day)
  // Monday 0 ... Sunday 6.
  const weekday = (new Date(date).getUTCDay() + 6) % 7
  // The week's Thursday decides its year.
  const thursday = date + (3 - weekday) * DAY_MS
  const weekYear = new Date(thursday).getUTCFullYear()
  const week = 1 + Math.floor((thursday - Date.UTC(weekYear, 0, 1)) / (7 * DAY_MS))
  return { year: weekYear, week }
}

/**
 * The bucket of a rule that a wall-clock time falls in, as one number: 2024022913 is the hour
 * 13:00-13:59 of 29 February 2024, 202409 the ninth ISO week of 2024. Two publishes share a
 * bucket exactly when their numbers are equal.
 */
export function bucketOf (rule: BucketRule, wall: WallClock): number {
  switch (rule) {
    case 'hourly': return ((wall.year * 100 + wall.month) * 100 + wall.day) * 100 + wall.hour
    case 'daily': return (wall.year * 100 + wall.month) * 100 + wall.day
    case 'weekly': {
      const { year, week } = isoWeek(wall.year, wall.month, wall.day)
      return year * 100 + week
    }
    case 'monthly': return wall.year * 100 + wall.month
    case 'yearly': return wall.year
  }
}
