import { describe, expect, it } from 'vitest'
import { exactSeconds, formatDuration, isCalendarDuration, isZeroDuration, parseDuration } from '../../src/retention/index.js'
import { InternalError } from '../../src/errors.js'

describe('retention durations', () => {
  it('reads each unit, largest first, and writes the same text back', () => {
    expect(parseDuration('48h')).toEqual({ years: 0, months: 0, weeks: 0, days: 0, hours: 48, minutes: 0, seconds: 0 })
    expect(parseDuration('1y2m')).toMatchObject({ years: 1, months: 2, days: 0 })
    expect(parseDuration('5min')).toMatchObject({ months: 0, minutes: 5 })
    for (const text of ['48h', '30d', '2w', '1y2m', '1y2m3w4d5h6min7s', '90s', '0s']) {
      const parsed = parseDuration(text)
      expect(parsed, text).toBeDefined()
      if (parsed !== undefined) expect(formatDuration(parsed)).toBe(text)
    }
  })

  it('takes "0s" as no span at all', () => {
    const zero = parseDuration('0s')
    expect(zero !== undefined && isZeroDuration(zero)).toBe(true)
    expect(formatDuration({ years: 0, months: 0, weeks: 0, days: 0, hours: 0, minutes: 0, seconds: 0 })).toBe('0s')
  })

  it('refuses anything else: no unit, units out of order or twice, fractions, signs, spaces, upper case', () => {
    for (const text of ['', '0', '48', '2m1y', '1d1d', '1.5d', '-1d', '+1d', ' 1d', '1d ', '1 d', '1D', '1H', '1mo', '1minute', 'h', 'd1', '1e3s']) {
      expect(parseDuration(text), JSON.stringify(text)).toBeUndefined()
    }
  })

  it('refuses spans past a century and numbers of more than six digits', () => {
    expect(parseDuration('100y')).toBeDefined()
    expect(parseDuration('101y')).toBeUndefined()
    expect(parseDuration('36600d')).toBeDefined()
    expect(parseDuration('36601d')).toBeUndefined()
    expect(parseDuration('1234567s')).toBeUndefined()
    expect(parseDuration(`${'9'.repeat(400)}s`)).toBeUndefined()
  })

  it('counts an exact span in seconds, and refuses to for years and months', () => {
    const exact = parseDuration('1w1d1h1min1s')
    expect(exact !== undefined && exactSeconds(exact)).toBe(8 * 86_400 + 3600 + 61)
    const calendar = parseDuration('1m')
    expect(calendar !== undefined && isCalendarDuration(calendar)).toBe(true)
    expect(() => exactSeconds(calendar ?? { years: 0, months: 1, weeks: 0, days: 0, hours: 0, minutes: 0, seconds: 0 })).toThrow(InternalError)
  })
})
