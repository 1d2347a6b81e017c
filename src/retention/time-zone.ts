/**
 * Wall-clock time in an IANA time zone, with Intl alone: the buckets of a policy are the days and
 * hours its user lives in, not UTC's.
 */

/** A moment as a clock on the wall of a time zone shows it. */
export interface WallClock {
  readonly year: number
  /** 1-12. */
  readonly month: number
  readonly day: number
  /** 0-23. */
  readonly hour: number
  readonly minute: number
  readonly second: number
  readonly millisecond: number
}

// Intl also takes offsets ("+01:00") on newer Node versions: a name only, so that every version agrees.
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,3}$/

const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter (timeZone: string): Intl.DateTimeFormat {
  let found = formatters.get(timeZone)
  if (found === undefined) {
    found = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric'
    })
    // Few zones are ever used; the bound keeps a caller that passes many from holding them all.
    if (formatters.size >= 64) formatters.clear()
    formatters.set(timeZone, found)
  }
  return found
}

let listed: ReadonlySet<string> | undefined

/**
 * Whether `name` is an IANA time zone this Node knows ("Europe/Berlin", "UTC"). Every config load
 * asks: a listed zone is taken from Intl's list, since a first formatter loads the zone data
 * (40-160 ms). An alias the list leaves out ("US/Eastern") is still tried with a formatter.
 */
export function isTimeZone (name: string): boolean {
  if (name.length > 64 || !ZONE_NAME.test(name)) return false
  if (name === 'UTC') return true
  try {
    listed ??= new Set(Intl.supportedValuesOf('timeZone'))
  } catch {
    listed = new Set()
  }
  if (listed.has(name)) return true
  try {
    formatter(name)
    return true
  } catch {
    return false
  }
}

/**
 * Why the system's time zone cannot be the policy's, or undefined when it can: a `TZ` that names a
 * file or an offset rule ("JST-9") has no IANA name, and the policy's days then fall back to UTC.
 */
export function systemTimeZoneProblem (env: NodeJS.ProcessEnv = process.env): string | undefined {
  const zone = new Intl.DateTimeFormat().resolvedOptions().timeZone
  if (typeof zone === 'string' && isTimeZone(zone)) return undefined
  const tz = env.TZ === undefined ? '' : ` (TZ=${JSON.stringify(env.TZ)})`
  return `the system's time zone${tz} has no IANA name, so the policy's hours and days are UTC's: set [retention] time_zone, such as "Europe/Berlin"`
}

/** The system's time zone, as Node sees it ($TZ, else the system's setting); UTC when it has none. */
export function systemTimeZone (): string {
  const zone = new Intl.DateTimeFormat().resolvedOptions().timeZone
  return typeof zone === 'string' && isTimeZone(zone) ? zone : 'UTC'
}

/** What a clock in `timeZone` shows at `ms` (milliseconds since the epoch). */
export function wallClock (ms: number, timeZone: string): WallClock {
  const fields: Record<string, number> = {}
  for (const part of formatter(timeZone).formatToParts(ms)) {
    if (part.type !== 'literal') fields[part.type] = Number(part.value)
  }
  return {
    year: fields.year ?? NaN,
    month: fields.month ?? NaN,
    day: fields.day ?? NaN,
    hour: fields.hour ?? NaN,
    minute: fields.minute ?? NaN,
    second: fields.second ?? NaN,
    millisecond: ((ms % 1000) + 1000) % 1000
  }
}

/** The wall clock's fields read as if they were UTC: its offset from UTC is `utcOf(wall) - ms`. */
export function utcOf (wall: WallClock): number {
  const ms = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second, wall.millisecond)
  // Date.UTC maps years 0-99 to 1900-1999.
  return wall.year >= 0 && wall.year < 100 ? new Date(ms).setUTCFullYear(wall.year) : ms
}

/**
 * The moment a clock in `timeZone` shows `wall`. A time a change of clocks skips, or shows twice,
 * gives one of the moments nearest it.
 */
export function momentOf (wall: WallClock, timeZone: string): number {
  const asUtc = utcOf(wall)
  const offset = (ms: number): number => utcOf(wallClock(ms, timeZone)) - ms
  const first = asUtc - offset(asUtc)
  return asUtc - offset(first)
}
