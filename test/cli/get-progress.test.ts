import { describe, expect, it } from 'vitest'
import { PROGRESS_LINE_MS, progressReporter } from '../../src/cli/get-progress.js'
import { formatBytes } from '../../src/cli/format.js'

describe('restore --files and get progress (src/cli/get-progress.ts)', () => {
  it('without a terminal, writes a whole line of counts and bytes every few seconds, none for the last file', () => {
    const lines: string[] = []
    let clock = 1_000_000
    const progress = progressReporter({ json: false, tty: false, write: (text) => { lines.push(text) }, now: () => clock })
    progress({ type: 'start', files: 3, bytes: 3 * 2 ** 20 })
    progress({ type: 'bytes', bytes: 2 ** 20 })
    progress({ type: 'file', path: 'a', outcome: 'written' })
    expect(lines).toEqual([])
    clock += PROGRESS_LINE_MS
    progress({ type: 'bytes', bytes: 2 ** 20 })
    expect(lines).toEqual([`cidsync: 1 of 3 files, ${formatBytes(2 * 2 ** 20)} of ${formatBytes(3 * 2 ** 20)} (${formatBytes(2 * 2 ** 20 / (PROGRESS_LINE_MS / 1000))}/s)\n`])
    // Not again before the interval has passed.
    clock += PROGRESS_LINE_MS - 1
    progress({ type: 'file', path: 'b', outcome: 'written' })
    expect(lines).toHaveLength(1)
    clock += 1
    progress({ type: 'bytes', bytes: 1 })
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatch(/^cidsync: 2 of 3 files, /)
    expect(lines.every(l => !l.includes('\r'))).toBe(true)
    clock += PROGRESS_LINE_MS
    progress({ type: 'file', path: 'c', outcome: 'written' })
    expect(lines).toHaveLength(2)
  })

  it('without a terminal, says nothing of one small file, however long it takes', () => {
    const lines: string[] = []
    let clock = 0
    const progress = progressReporter({ json: false, tty: false, write: (text) => { lines.push(text) }, now: () => clock })
    progress({ type: 'start', files: 1, bytes: 100 })
    clock += 10 * PROGRESS_LINE_MS
    progress({ type: 'bytes', bytes: 50 })
    expect(lines).toEqual([])
  })

  it('on a terminal, redraws one bar in place', () => {
    const out: string[] = []
    let clock = 0
    const progress = progressReporter({ json: false, tty: true, write: (text) => { out.push(text) }, now: () => clock })
    progress({ type: 'start', files: 1, bytes: 10 })
    clock += 200
    progress({ type: 'bytes', bytes: 5 })
    progress({ type: 'file', path: 'a', outcome: 'written' })
    expect(out[0]).toMatch(/^\r\[/)
    expect(out.at(-1)).toBe('\n')
  })

  it('on a terminal, says the rate in whole bytes and a long wait in minutes or hours', () => {
    const out: string[] = []
    let clock = 0
    const progress = progressReporter({ json: false, tty: true, write: (text) => { out.push(text) }, now: () => clock })
    progress({ type: 'start', files: 2, bytes: 100_000 })
    clock += 3000
    progress({ type: 'bytes', bytes: 100 })
    expect(out.at(-1)).toContain(', 33 B/s ETA 50 min')
    clock += 3000
    progress({ type: 'bytes', bytes: 10 })
    expect(out.at(-1)).toMatch(/, 18 B\/s ETA [0-9]+ (min|h) {3}$/)
  })
})
