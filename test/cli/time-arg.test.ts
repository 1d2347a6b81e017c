import { describe, it, expect } from 'vitest'
import { parseTimeArg } from '../../src/cli/time-arg.js'
import { UsageError } from '../../src/errors.js'

const now = new Date('2026-11-23T12:00:00.000Z')
const at = (text: string): string => parseTimeArg(text, now).toISOString()

describe('--at', () => {
  it('takes ages, alone or combined', () => {
    expect(at('90m')).toBe('2026-11-23T10:30:00.000Z')
    expect(at('2h30m')).toBe('2026-11-23T09:30:00.000Z')
    expect(at('1.5h')).toBe('2026-11-23T10:30:00.000Z')
    expect(at('1w')).toBe('2026-11-16T12:00:00.000Z')
  })

  it('takes now, in any case', () => {
    expect(at('now')).toBe('2026-11-23T12:00:00.000Z')
    expect(at(' NOW ')).toBe('2026-11-23T12:00:00.000Z')
  })

  it('means the end of what a time names, so a time copied from `cidsync history` (to the second) finds that publish', () => {
    expect(at('2026-11-20')).toBe('2026-11-20T23:59:59.999Z')
    expect(at('2026-11-20T08:00Z')).toBe('2026-11-20T08:00:59.999Z')
    expect(at('2026-11-20T08:00:00Z')).toBe('2026-11-20T08:00:00.999Z')
    expect(at('2026-11-20 08:00:00Z')).toBe('2026-11-20T08:00:00.999Z')
    expect(at('2026-11-20T08:00:00.3Z')).toBe('2026-11-20T08:00:00.399Z')
    expect(at('2026-11-20T08:00:00.123Z')).toBe('2026-11-20T08:00:00.123Z')
    expect(at('2026-11-20T09:00:00+01:00')).toBe('2026-11-20T08:00:00.999Z')
  })

  it('refuses what is not a time, saying what is; a time with no zone asks for one', () => {
    expect(() => at('yesterday')).toThrow(UsageError)
    expect(() => at('2026-11-20T08:00:00')).toThrow(/add Z for UTC/)
    expect(() => at('2026-13-45')).toThrow(/is not a time/)
  })
})
