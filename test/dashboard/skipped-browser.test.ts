import { describe, it, expect } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { startInProcessDaemon, statusOf } from '../helpers/in-process-daemon.js'
import { bound, until } from '../helpers/wait.js'
import { hasChromium, launchChromium } from '../helpers/chromium.js'

/** A name that is not UTF-8 (so it is skipped, never retried), led by `lead`. */
const notUtf8 = (dir: string, lead: string): Buffer => Buffer.concat([Buffer.from(`${dir}/${lead}`), Buffer.from([0xff])])

describe.skipIf(!hasChromium)('the dashboard\'s skipped paths in a real browser', () => {
  it('opens "N skipped" to each path with why and what to do, names neutralised, the first 20 listed and the rest counted', async () => {
    const dir = await useTempDir()
    const notes = join(dir, 'notes')
    await mkdir(notes)
    // Found by the first scan, so it is among the paths listed: a name holding ESC and a right-to-left override.
    await writeFile(notUtf8(notes, 'evil\u001b[31m\u202e'), 'x')
    // A FIFO: listed as skipped, but it has no content to lose.
    execFileSync('mkfifo', [join(notes, 'a-pipe')])
    const { port } = await startInProcessDaemon(dir, { snapshot: { quiet_seconds: 3600, min_interval_seconds: 3600 } })
    await until(async () => (await statusOf(port)).folders[0]?.skipped === 2 || undefined, 20_000, 'the first two skipped')
    for (let i = 0; i < 25; i++) await writeFile(notUtf8(notes, `bad-${String(i).padStart(2, '0')}-`), 'x')
    const s = await until(async () => { const s = await statusOf(port); return s.folders[0]?.skipped === 27 ? s : undefined }, 20_000, 'all 27 skipped')

    // The JSON: every path (up to 100 a folder) with its reason and what to do; the FIFO counted apart.
    const folder = s.folders[0]
    expect(folder?.skippedWithoutContent).toBe(1)
    expect(folder?.skippedFiles).toHaveLength(27)
    expect(folder?.skippedFiles.find(f => f.path.startsWith('evil'))).toMatchObject({ path: 'evil\u001b[31m\u202e\\xff', reason: 'ERR_NAME_NOT_UTF8', advice: expect.stringMatching(/^its name is not valid UTF-8: rename it/) })
    expect(folder?.skippedFiles.every(f => f.advice.length > 0)).toBe(true)

    const page = await (await launchChromium()).newPage()
    const errors: string[] = []
    page.on('pageerror', err => { errors.push(err.message) })
    await page.goto(`http://127.0.0.1:${port}/`)
    await page.locator('#live.ok').waitFor({ timeout: bound(10_000) })
    // On top: the 26 with content make the line amber; the FIFO does not count.
    await until(async () => (await page.locator('#glance').getAttribute('data-level')) === 'amber' || undefined, 10_000, 'the glance amber')
    expect(await page.locator('#glance .sentence').innerText()).toMatch(/^26 paths are skipped, not indexed; /)

    const row = page.locator('#folders tr[data-skipped="notes"]')
    const summary = row.locator('summary')
    expect(await summary.innerText()).toBe('27 paths skipped in notes: not indexed, so not protected')
    expect(await row.locator('li').first().isVisible()).toBe(false)
    await summary.click()
    const items = row.locator('li')
    expect(await items.count()).toBe(21)
    expect(await items.last().innerText()).toBe('7 more not listed here (`cidsync status --json` lists up to 100 a folder)')
    const evil = row.locator('li', { hasText: 'evil' })
    const shown = await evil.innerText()
    expect(shown).toContain('evil\\x1b[31m\\u202e\\xff [ERR_NAME_NOT_UTF8] since ')
    expect(shown).toContain('not retried')
    expect(shown).toContain('what to do: its name is not valid UTF-8: rename it to index it')
    expect(shown).not.toMatch(/[\u001b\u202e]/)
    const fifo = await row.locator('li', { hasText: 'a-pipe' }).innerText()
    expect(fifo).toContain('[ERR_SPECIAL_FILE]')
    expect(fifo).toContain('what to do: a FIFO, socket or device: it has no content to index')

    // Still open after the page redraws (every event does).
    await writeFile(join(notes, 'c.md'), 'gamma')
    await until(async () => (await page.locator('#folders tr[data-folder="notes"] .entries').innerText()) === '1' || undefined, 10_000, 'c.md shown')
    expect(await row.locator('details').getAttribute('open')).not.toBeNull()
    expect(await items.first().isVisible()).toBe(true)
    expect(errors).toEqual([])
  })
})
