import { UsageError } from '../errors.js'

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/**
 * A point in time as `--at` takes it: RFC 3339 (`2026-11-20T08:00:00Z`, or with an offset), a date
 * (`2026-11-20`), an age before `now` (`90m`, `2h`, `2h30m`, `3d`, `1w`), or `now`. A time is as precise
 * as it is written and means the end of what it names: `2026-11-20` is that whole day (UTC),
 * `…T08:00:00Z` that whole second, so a time copied from `cidsync history` finds that publish.
 */
export function parseTimeArg (text: string, now = new Date()): Date {
  const trimmed = text.trim()
  if (trimmed.toLowerCase() === 'now') return now
  if (/^(\d+(\.\d+)?[smhdw])+$/i.test(trimmed)) {
    let ms = 0
    for (const [, amount, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)([smhdw])/gi)) ms += Number(amount) * (UNITS[(unit as string).toLowerCase()] as number)
    return new Date(now.getTime() - ms)
  }
  const date = /^\d{4}-\d{2}-\d{2}$/.exec(trimmed)
  if (date !== null) {
    const start = Date.parse(`${trimmed}T00:00:00Z`)
    if (Number.isFinite(start)) return new Date(start + 86_400_000 - 1)
  }
  const time = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2})(:\d{2})?(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.exec(trimmed)
  if (time !== null) {
    const parsed = Date.parse(trimmed.replace(' ', 'T'))
    // The end of the last unit written: a minute, a second, or the fraction given.
    const rest = time[4] !== undefined ? 10 ** (3 - Math.min(3, time[4].length - 1)) - 1 : time[3] !== undefined ? 999 : 59_999
    if (Number.isFinite(parsed)) return new Date(parsed + Math.max(0, rest))
  }
  const noZone = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(trimmed) ? ' (add Z for UTC, or an offset such as +01:00)' : ''
  throw new UsageError(`--at ${JSON.stringify(text)} is not a time${noZone}: give RFC 3339 (2026-11-20T08:00:00Z, 2026-11-20T09:00:00+01:00), a date (2026-11-20: that whole day, UTC), an age such as 90m, 2h30m, 3d, 1w, or now`)
}
