import type { Duration } from './duration.js'
import { momentOf, wallClock } from './time-zone.js'

function daysInMonth (year: number, month: number): number {
  const date = new Date(0)
  date.setUTCFullYear(year, month, 0)
  return date.getUTCDate()
}

/**
 * The earliest moment within `d` of `anchorMs`: years and months counted back on the calendar of
 * `timeZone`, then weeks and days, then hours, minutes and seconds as exact spans. A day that the
 * month counted back to lacks (31 March less a month) becomes its last day (29 February in a leap
 * year): the window never shrinks below the month it names.
 */
export function withinStart (anchorMs: number, d: Duration, timeZone: string): number {
  const wall = wallClock(anchorMs, timeZone)
  const monthIndex = wall.year * 12 + (wall.month - 1) - (d.years * 12 + d.months)
  const year = Math.floor(monthIndex / 12)
  const month = monthIndex - year * 12 + 1
  const day = Math.min(wall.day, daysInMonth(year, month))
  // setUTCFullYear carries days below 1 into the months before, and takes every year as it is.
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day - (d.weeks * 7 + d.days))
  const shifted = { ...wall, year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() }
  const calendar = d.years === 0 && d.months === 0 && d.weeks === 0 && d.days === 0 ? anchorMs : momentOf(shifted, timeZone)
  return calendar - ((d.hours * 60 + d.minutes) * 60 + d.seconds) * 1000
}
