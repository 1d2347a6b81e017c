import { describe, expect, it } from 'vitest'
import { Interned } from '../../src/util/interned.js'

describe('Interned', () => {
  it('answers one copy of equal strings, null as null, and never holds more than its bound', () => {
    const strings = new Interned(2)
    const first = strings.of(['dev', 'ice'].join(''))
    expect(strings.of(['de', 'vice'].join(''))).toBe(first)
    expect(strings.of(null)).toBeNull()
    // Past the bound it starts again: every answer is still equal to what was asked.
    for (let i = 0; i < 10; i++) expect(strings.of(`name-${i}`)).toBe(`name-${i}`)
    expect((strings as unknown as { held: Map<string, string> }).held.size).toBeLessThanOrEqual(2)
  })
})
