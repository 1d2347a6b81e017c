import { UsageError } from '../errors.js'

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/**
 * A point in time as `--at` takes it: RFC 3339 (`2026-11-20T08:00:00Z`, or with an offset), a date
 * (`2026-11-20`, midnight UTC), or an age before `now` (`90m`, `2h`, `3d`, `1w`).
 */
export function parseTimeArg (text: string, now = new Date()): Date {
  const trimmed = text.trim()
  const age = /^(\d+(?:\.\d+)?)\s*([smhdw])$/i.exec(trimmed)
  if (age !== null) return new Date(now.getTime() - Number(age[1]) * (UNITS[(age[2] as string).toLowerCase()] as number))
  const rfc3339 = /^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2}))?$/
  if (rfc3339.test(trimmed)) {
    const parsed = new Date(trimmed.replace(' ', 'T'))
    if (Number.isFinite(parsed.getTime())) return parsed
  }
  throw new UsageError(`--at ${JSON.stringify(text)} is not a time: give RFC 3339 (2026-11-20T08:00:00Z, 2026-11-20T09:00:00+01:00), a date (2026-11-20), or an age such as 90m, 2h, 3d, 1w`)
}
