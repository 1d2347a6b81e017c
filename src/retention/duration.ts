import { InternalError } from '../errors.js'

/**
 * A span as people write one for retention: "48h", "30d", "2w", "1y2m", "0s". Years and months
 * are calendar units, counted back on the calendar of the configured time zone; the rest are exact.
 */
export interface Duration {
  readonly years: number
  readonly months: number
  readonly weeks: number
  readonly days: number
  readonly hours: number
  readonly minutes: number
  readonly seconds: number
}

/** What a duration may say, for messages. */
export const DURATION_HELP = 'a duration such as "48h", "30d", "2w" or "1y2m": whole numbers with units y, m (months), w, d, h, min, s, largest first, each at most once'

// Largest unit first, each at most once: "1y2m" reads one way only. `m` is months, as restic reads it.
const PATTERN = /^(?:(\d{1,6})y)?(?:(\d{1,6})m(?!in))?(?:(\d{1,6})w)?(?:(\d{1,6})d)?(?:(\d{1,6})h)?(?:(\d{1,6})min)?(?:(\d{1,6})s)?$/

/** The longest span taken, about a century: a retention reaching further is a typo. */
const MAX_DAYS = 36_600

const SECONDS_PER_DAY = 86_400

/** The span in days, a month taken as its longest (31 days) and a year as 366: for bounds only. */
function roughDays (d: Duration): number {
  return d.years * 366 + d.months * 31 + d.weeks * 7 + d.days + (d.hours * 3600 + d.minutes * 60 + d.seconds) / SECONDS_PER_DAY
}

/** The duration `text` says, or undefined when it is not one (or reaches past a century). */
export function parseDuration (text: string): Duration | undefined {
  if (text.length === 0 || text.length > 64) return undefined
  const match = PATTERN.exec(text)
  if (match === null) return undefined
  const [, years, months, weeks, days, hours, minutes, seconds] = match
  if ([years, months, weeks, days, hours, minutes, seconds].every(part => part === undefined)) return undefined
  const n = (part: string | undefined): number => part === undefined ? 0 : Number(part)
  const duration = { years: n(years), months: n(months), weeks: n(weeks), days: n(days), hours: n(hours), minutes: n(minutes), seconds: n(seconds) }
  return roughDays(duration) > MAX_DAYS ? undefined : duration
}

/** The canonical text of a duration: "1y2m", "48h"; "0s" for none. */
export function formatDuration (d: Duration): string {
  const parts: Array<[number, string]> = [[d.years, 'y'], [d.months, 'm'], [d.weeks, 'w'], [d.days, 'd'], [d.hours, 'h'], [d.minutes, 'min'], [d.seconds, 's']]
  const text = parts.filter(([n]) => n > 0).map(([n, unit]) => `${n}${unit}`).join('')
  return text === '' ? '0s' : text
}

export function isZeroDuration (d: Duration): boolean {
  return d.years === 0 && d.months === 0 && d.weeks === 0 && d.days === 0 && d.hours === 0 && d.minutes === 0 && d.seconds === 0
}

/** Whether the span has a calendar part (years or months), whose length depends on where it starts. */
export function isCalendarDuration (d: Duration): boolean {
  return d.years > 0 || d.months > 0
}

/** The exact length in seconds of a duration without years or months (a day as 86,400 s). */
export function exactSeconds (d: Duration): number {
  if (isCalendarDuration(d)) throw new InternalError(`${formatDuration(d)} has years or months, whose length depends on the calendar`)
  return ((d.weeks * 7 + d.days) * 24 + d.hours) * 3600 + d.minutes * 60 + d.seconds
}

/** An exact span of whole seconds in its largest unit that divides it: "36h", "90min", "0s". */
export function exactSpanText (seconds: number): string {
  for (const [unit, size] of [['d', SECONDS_PER_DAY], ['h', 3600], ['min', 60]] as const) {
    if (seconds > 0 && seconds % size === 0) return `${seconds / size}${unit}`
  }
  return `${seconds}s`
}
