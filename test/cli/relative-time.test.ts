import { describe, expect, it } from 'vitest'
import { relativeTime, timeWithAge } from '../../src/cli/relative-time.js'

describe('relative times in cidsync status', () => {
  const now = Date.parse('2026-05-01T12:00:00.000Z')
  it('says how long ago, or how soon, in the unit that fits', () => {
    expect(relativeTime('2026-05-01T11:59:58.000Z', now)).toBe('just now')
    expect(relativeTime('2026-05-01T11:59:15.000Z', now)).toBe('45 s ago')
    expect(relativeTime('2026-05-01T11:57:00.000Z', now)).toBe('3 min ago')
    expect(relativeTime('2026-05-01T09:00:00.000Z', now)).toBe('3 h ago')
    expect(relativeTime('2026-04-28T12:00:00.000Z', now)).toBe('3 d ago')
    expect(relativeTime('2026-05-01T12:02:00.000Z', now)).toBe('in 2 min')
    expect(relativeTime('not a time', now)).toBe('?')
  })
  it('keeps the ISO time beside it', () => {
    expect(timeWithAge('2026-05-01T11:57:00.000Z', now)).toBe('2026-05-01T11:57:00.000Z (3 min ago)')
  })
})
