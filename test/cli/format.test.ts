import { describe, expect, it } from 'vitest'
import { countOf, formatBytes, formatCount, formatTable } from '../../src/cli/format.js'

describe('format', () => {
  it('groups a count as en-US does, for every size and sign, without loading ICU for whole numbers', () => {
    const samples = [0, 7, 42, 999, 1000, 1001, 12_345, 999_999, 1_000_000, 123_456_789, Number.MAX_SAFE_INTEGER, -1, -1000, -9_876_543, 1.5, 1234.5678, Number.NaN, Infinity, 2 ** 60]
    for (let n = 1; n < 1e15; n *= 7) samples.push(n, -n)
    for (const n of samples) expect(formatCount(n), String(n)).toBe(n.toLocaleString('en-US'))
  })

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

  it('lays out a table of 300,000 rows (`ls` of a large index) without overflowing the stack', () => {
    const rows = Array.from({ length: 300_000 }, (_, i) => [`notes/file-${i}.txt`, String(i)])
    const text = formatTable(['PATH', 'SIZE'], rows, new Set([1]))
    const lines = text.split('\n')
    expect(lines).toHaveLength(300_002)
    expect(lines[1]).toBe(`${'notes/file-0.txt'.padEnd(21)}  ${'0'.padStart(6)}`)
    expect(lines[300_000]).toBe('notes/file-299999.txt  299999')
  })
})
