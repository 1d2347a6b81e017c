import { describe, expect, it } from 'vitest'
import { PROGRESS_LINE_MS, jsonLine, progressReporter } from '../../src/cli/get-progress.js'
import { formatBytes } from '../../src/cli/format.js'

describe('restore --files and get progress (src/cli/get-progress.ts)', () => {
  it('without a terminal, writes a whole line of counts and bytes every few seconds, none for the last file', () => {
    const lines: string[] = []
    let clock = 1_000_000
    const progress = progressReporter({ json: false, tty: false, write: (text) => { lines.push(text) }, now: () => clock })
    progress({ type: 'get:start', detail: { files: 3, bytes: 3 * 2 ** 20 } })
    progress({ type: 'get:bytes', detail: { bytes: 2 ** 20 } })
    progress({ type: 'get:file', detail: { path: 'a', outcome: 'written' } })
    expect(lines).toEqual([])
    clock += PROGRESS_LINE_MS
    progress({ type: 'get:bytes', detail: { bytes: 2 ** 20 } })
    expect(lines).toEqual([`cidsync: 1 of 3 files, ${formatBytes(2 * 2 ** 20)} of ${formatBytes(3 * 2 ** 20)} (${formatBytes(2 * 2 ** 20 / (PROGRESS_LINE_MS / 1000))}/s)\n`])
    // Not again before the interval has passed.
    clock += PROGRESS_LINE_MS - 1
    progress({ type: 'get:file', detail: { path: 'b', outcome: 'written' } })
    expect(lines).toHaveLength(1)
    clock += 1
    progress({ type: 'get:bytes', detail: { bytes: 1 } })
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatch(/^cidsync: 2 of 3 files, /)
    expect(lines.every(l => !l.includes('\r'))).toBe(true)
    clock += PROGRESS_LINE_MS
    progress({ type: 'get:file', detail: { path: 'c', outcome: 'written' } })
    expect(lines).toHaveLength(2)
  })

  it('without a terminal, says nothing of one small file, however long it takes', () => {
    const lines: string[] = []
    let clock = 0
    const progress = progressReporter({ json: false, tty: false, write: (text) => { lines.push(text) }, now: () => clock })
    progress({ type: 'get:start', detail: { files: 1, bytes: 100 } })
    clock += 10 * PROGRESS_LINE_MS
    progress({ type: 'get:bytes', detail: { bytes: 50 } })
    expect(lines).toEqual([])
  })

  it('on a terminal, redraws one bar in place', () => {
    const out: string[] = []
    let clock = 0
    const progress = progressReporter({ json: false, tty: true, write: (text) => { out.push(text) }, now: () => clock })
    progress({ type: 'get:start', detail: { files: 1, bytes: 10 } })
    clock += 200
    progress({ type: 'get:bytes', detail: { bytes: 5 } })
    progress({ type: 'get:file', detail: { path: 'a', outcome: 'written' } })
    expect(out[0]).toMatch(/^\r\[/)
    expect(out.at(-1)).toBe('\n')
    // What comes after the files (symlinks, directories) draws the finished bar no more.
    const drawn = out.length
    clock += 200
    progress({ type: 'get:entry', detail: { kind: 'dir', path: 'd', outcome: 'written' } })
    expect(out).toHaveLength(drawn)
  })

  it('on a terminal, says the rate in whole bytes and a long wait in minutes or hours', () => {
    const out: string[] = []
    let clock = 0
    const progress = progressReporter({ json: false, tty: true, write: (text) => { out.push(text) }, now: () => clock })
    progress({ type: 'get:start', detail: { files: 2, bytes: 100_000 } })
    clock += 3000
    progress({ type: 'get:bytes', detail: { bytes: 100 } })
    expect(out.at(-1)).toContain(', 33 B/s ETA 50 min')
    clock += 3000
    progress({ type: 'get:bytes', detail: { bytes: 10 } })
    expect(out.at(-1)).toMatch(/, 18 B\/s ETA [0-9]+ (min|h) {3}$/)
  })

  it('with --json, prints each event as it always printed it: its short name beside its detail', () => {
    expect([
      jsonLine({ type: 'get:start', detail: { files: 2, bytes: 10 } }),
      jsonLine({ type: 'get:bytes', detail: { bytes: 10 } }),
      jsonLine({ type: 'get:file', detail: { path: 'notes/a', outcome: 'written' } }),
      jsonLine({ type: 'get:file', detail: { path: 'notes/b', outcome: 'failed', reason: 'gone', code: 'ERR_X' } }),
      jsonLine({ type: 'get:entry', detail: { kind: 'dir', path: 'notes/', outcome: 'written' } })
    ]).toEqual([
      '{"type":"start","files":2,"bytes":10}',
      '{"type":"bytes","bytes":10}',
      '{"type":"file","path":"notes/a","outcome":"written"}',
      '{"type":"file","path":"notes/b","outcome":"failed","reason":"gone","code":"ERR_X"}',
      '{"type":"entry","kind":"dir","path":"notes/","outcome":"written"}'
    ])
  })
})
