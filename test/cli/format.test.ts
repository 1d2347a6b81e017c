import { describe, expect, it } from 'vitest'
import { countOf, formatBytes } from '../../src/cli/format.js'

describe('format', () => {
  it('agrees a count with its word', () => {
    expect(countOf(1, 'entry', 'entries')).toBe('1 entry')
    expect(countOf(0, 'entry', 'entries')).toBe('0 entries')
    expect(countOf(12_345, 'file', 'files')).toBe('12,345 files')
  })

  it('shows sizes in binary units, as the dashboard does', () => {
    expect(formatBytes(12)).toBe('12 B')
    expect(formatBytes(1536)).toBe('1.5 KiB')
    expect(formatBytes(2 * 1024 * 1024)).toBe('2 MiB')
    expect(formatBytes(1_500_000)).toBe('1.4 MiB')
  })
})
