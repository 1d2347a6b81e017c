import { describe, expect, it } from 'vitest'
import { closeSync, futimesSync, openSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { utimesTime } from '../../src/custody/mtime.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('a restored file\'s mtime', () => {
  it('lands on the nearest microsecond of the row\'s mtime, by path and by descriptor (plain ms / 1000 came back a microsecond early for some)', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'f')
    writeFileSync(path, 'x')
    let early = 0
    for (let i = 0; i < 500; i++) {
      // mtimes as stat gives them: whole seconds of today's epoch and a nanosecond part, in ms.
      const mtimeMs = 1_795_844_314_000 + i * 997 + (i * 7919 % 1_000_000) / 1_000_000 + (i % 7) * 0.000_123
      // Whole microseconds: what libuv keeps, and what a double near 1.8e12 ms can still tell apart.
      const wholeUs = Math.round(mtimeMs * 1000) / 1000
      const us = (): number => Number(statSync(path, { bigint: true }).mtimeNs / 1000n)
      utimesSync(path, Date.now() / 1000, utimesTime(wholeUs))
      expect(us()).toBe(Math.round(wholeUs * 1000))
      const fd = openSync(path, 'r+')
      try {
        futimesSync(fd, Date.now() / 1000, utimesTime(wholeUs))
      } finally {
        closeSync(fd)
      }
      expect(us()).toBe(Math.round(wholeUs * 1000))
      utimesSync(path, Date.now() / 1000, wholeUs / 1000)
      if (us() !== Math.round(wholeUs * 1000)) early++
    }
    // The plain division on the same whole microseconds: some came back one early (the review's finding).
    expect(early).toBeGreaterThan(0)
  })

  it('keeps a time before 1970 (Node takes a negative number as now): to the millisecond', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'old')
    writeFileSync(path, 'x')
    for (const mtimeMs of [-1_500, -157_766_400_000, -1]) {
      utimesSync(path, Date.now() / 1000, utimesTime(mtimeMs))
      expect(statSync(path).mtimeMs).toBe(mtimeMs)
    }
  })
})

