import { describe, expect, it } from 'vitest'
import { parseDuration, type Duration } from '../../src/retention/index.js'
import { withinStart } from '../../src/retention/within.js'

function span (text: string): Duration {
  const d = parseDuration(text)
  if (d === undefined) throw new Error(`not a duration: ${text}`)
  return d
}

const start = (anchor: string, within: string, zone = 'UTC'): string => new Date(withinStart(Date.parse(anchor), span(within), zone)).toISOString()

describe('the start of keep_within\'s window', () => {
  it('counts hours, minutes and seconds as exact spans', () => {
    expect(start('2024-06-10T12:00:00.000Z', '48h')).toBe('2024-06-08T12:00:00.000Z')
    expect(start('2024-06-10T12:00:00.000Z', '1h30min15s')).toBe('2024-06-10T10:29:45.000Z')
    expect(start('2024-06-10T12:00:00.000Z', '0s')).toBe('2024-06-10T12:00:00.000Z')
  })

  it('counts years and months on the calendar, a missing day becoming the month\'s last', () => {
    expect(start('2024-06-10T12:00:00.000Z', '1y2m')).toBe('2023-04-10T12:00:00.000Z')
    expect(start('2024-03-31T12:00:00.000Z', '1m')).toBe('2024-02-29T12:00:00.000Z')
    expect(start('2023-03-31T12:00:00.000Z', '1m')).toBe('2023-02-28T12:00:00.000Z')
    // From a leap day back a year: the 28th, never 1 March.
    expect(start('2024-02-29T12:00:00.000Z', '1y')).toBe('2023-02-28T12:00:00.000Z')
    expect(start('2028-02-29T12:00:00.000Z', '4y')).toBe('2024-02-29T12:00:00.000Z')
    expect(start('2024-01-15T00:00:00.000Z', '13m')).toBe('2022-12-15T00:00:00.000Z')
  })

  it('counts days and weeks on the calendar, across months and leap days', () => {
    expect(start('2024-03-01T06:00:00.000Z', '1d')).toBe('2024-02-29T06:00:00.000Z')
    expect(start('2023-03-01T06:00:00.000Z', '1d')).toBe('2023-02-28T06:00:00.000Z')
    expect(start('2024-01-03T06:00:00.000Z', '1w')).toBe('2023-12-27T06:00:00.000Z')
  })

  it('keeps the wall-clock time across a change of clocks: a day back over it is 23 or 25 hours', () => {
    // Berlin, 31 March 2024: the clocks went forward an hour.
    expect(start('2024-03-31T12:00:00.000Z', '1d', 'Europe/Berlin')).toBe('2024-03-30T13:00:00.000Z')
    expect(start('2024-03-31T12:00:00.000Z', '24h', 'Europe/Berlin')).toBe('2024-03-30T12:00:00.000Z')
    // 27 October 2024: back an hour.
    expect(start('2024-10-27T12:00:00.000Z', '1d', 'Europe/Berlin')).toBe('2024-10-26T11:00:00.000Z')
  })

  it('counts in the zone\'s calendar: the same moment, a different month', () => {
    // 1 March 00:30 in Tokyo is still February in UTC.
    expect(start('2024-02-29T15:30:00.000Z', '1m', 'Asia/Tokyo')).toBe('2024-01-31T15:30:00.000Z')
    expect(start('2024-02-29T15:30:00.000Z', '1m', 'UTC')).toBe('2024-01-29T15:30:00.000Z')
  })
})
