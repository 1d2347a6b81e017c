import { describe, expect, it } from 'vitest'
import { isTimeZone, systemTimeZone } from '../../src/retention/index.js'
import { momentOf, wallClock } from '../../src/retention/time-zone.js'

describe('time zones', () => {
  it('knows IANA names, and refuses offsets, junk and overlong names', () => {
    for (const zone of ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5', 'Etc/UTC', 'US/Eastern', 'Asia/Calcutta']) expect(isTimeZone(zone), zone).toBe(true)
    for (const zone of ['', 'Mars/Olympus', '+01:00', 'UTC+1', 'Europe/Berlin\n', '../etc/passwd', 'Europe/'.repeat(20)]) expect(isTimeZone(zone), zone).toBe(false)
    expect(isTimeZone(systemTimeZone())).toBe(true)
  })

  it('reads the wall clock of two zones at one moment, and finds the moment again', () => {
    const ms = Date.parse('2024-06-01T15:30:00.250Z')
    expect(wallClock(ms, 'America/New_York')).toEqual({ year: 2024, month: 6, day: 1, hour: 11, minute: 30, second: 0, millisecond: 250 })
    expect(wallClock(ms, 'Asia/Tokyo')).toEqual({ year: 2024, month: 6, day: 2, hour: 0, minute: 30, second: 0, millisecond: 250 })
    expect(momentOf(wallClock(ms, 'America/New_York'), 'America/New_York')).toBe(ms)
    expect(momentOf(wallClock(ms, 'Asia/Tokyo'), 'Asia/Tokyo')).toBe(ms)
  })

  it('finds a moment on the days the clocks change', () => {
    // Berlin: 02:00 CET became 03:00 CEST on 31 March 2024; 03:00 CEST became 02:00 CET on 27 October.
    const wall = { year: 2024, month: 3, day: 31, hour: 12, minute: 0, second: 0, millisecond: 0 }
    expect(new Date(momentOf(wall, 'Europe/Berlin')).toISOString()).toBe('2024-03-31T10:00:00.000Z')
    expect(new Date(momentOf({ ...wall, day: 30 }, 'Europe/Berlin')).toISOString()).toBe('2024-03-30T11:00:00.000Z')
    // Midnight is never skipped there; an hour the change skips lands beside it.
    const skipped = momentOf({ ...wall, hour: 2, minute: 30 }, 'Europe/Berlin')
    expect(Math.abs(skipped - Date.parse('2024-03-31T01:00:00Z'))).toBeLessThanOrEqual(3_600_000)
    const twice = momentOf({ ...wall, month: 10, day: 27, hour: 2, minute: 30 }, 'Europe/Berlin')
    expect([Date.parse('2024-10-27T00:30:00Z'), Date.parse('2024-10-27T01:30:00Z')]).toContain(twice)
  })
})
