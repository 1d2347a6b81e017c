import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { useTempDir } from '../helpers/temp-dir.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { bound, until } from '../helpers/wait.js'
import { hasChromium, launchChromium } from '../helpers/chromium.js'

/** Kolkata is UTC+5:30 all year: its clock reads apart from UTC's in hours and minutes both. */
const ZONE = 'Asia/Kolkata'
const OFFSET_MS = 5.5 * 3600_000

/** `2026-05-01 10:00:00Z`, as the CLI and the page write a time. */
const utc = (iso: string): string => new Date(iso).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z')
/** `15:30:00`: the same time on a clock in {@link ZONE}. */
const kolkata = (iso: string): string => new Date(Date.parse(iso) + OFFSET_MS).toISOString().slice(11, 19)

async function post (port: number, token: string, path: string): Promise<void> {
  const answer = await httpGet({ port }, path, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
  expect(answer.status, answer.body).toBe(200)
}

async function text (page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).innerText()).trim()
}

describe.skipIf(!hasChromium)('the dashboard\'s one-glance line and times in a real browser', () => {
  it('says on top whether every file is protected, restorable as of which drill, and mirrors; times in UTC, local in the tooltip', async () => {
    const dir = await useTempDir()
    const { port, token, notes } = await startInProcessDaemon(dir, {
      folders: [{ name: 'notes', path: 'notes', store: true }],
      snapshot: { quiet_seconds: 3600, min_interval_seconds: 3600 }
    })
    await writeFile(join(notes, 'a.md'), 'alpha')
    await until(async () => (await statusOf(port)).index.files === 1 || undefined, 20_000, 'a.md indexed')
    await untilReached(port)
    await post(port, token, '/snapshot')

    // A browser far from UTC, in another language: the page must not follow either.
    const page = await (await launchChromium(undefined, { timezoneId: ZONE, locale: 'de-DE' })).newPage()
    const errors: string[] = []
    page.on('pageerror', err => { errors.push(err.message) })
    await page.goto(`http://127.0.0.1:${port}/`)
    await page.locator('#live.ok').waitFor({ timeout: bound(10_000) })
    // Published and stored, but no drill yet: amber, and what to do.
    const glance = page.locator('#glance')
    const undrilled = 'The one file is stored and published; no restore drill has checked the index yet; no mirrors are set up.'
    await until(async () => (await text(page, '#glance .sentence')) === undrilled || undefined, 10_000, 'the glance to say no drill ran yet')
    expect(await glance.getAttribute('data-level')).toBe('amber')
    expect(await text(page, '#glance .todo')).toBe('What to do: press Verify now (or run `cidsync verify`)')
    expect(await text(page, '#glance .level')).toBe('on its way')
    // It is the first thing on the page.
    expect(await page.locator('main > section:not([hidden])').first().getAttribute('id')).toBe('glance')

    // After a drill: green, restorable as of that drill's time, in UTC.
    await post(port, token, '/verify')
    await until(async () => (await glance.getAttribute('data-level')) === 'green' || undefined, 10_000, 'the glance green')
    const checkedAt = (await statusOf(port)).restorable?.checkedAt ?? ''
    const sentence = await text(page, '#glance .sentence')
    expect(sentence).toMatch(new RegExp(`^The one file is stored and published; the index is restorable as of the drill at ${utc(checkedAt)} \\((\\d+ s ago|in \\d+ s)\\); no mirrors are set up\\.$`))
    expect(await page.locator('#glance .todo').isVisible()).toBe(false)
    expect(await text(page, '#glance .level')).toBe('all good')
    const drillTime = page.locator('#glance time')
    expect(await drillTime.getAttribute('datetime')).toBe(checkedAt)
    expect(await drillTime.getAttribute('title')).toContain(kolkata(checkedAt))

    // Elsewhere too: the last publish, and the live events' clock.
    const last = (await statusOf(port)).publish?.last?.at ?? ''
    expect(await text(page, '#publish')).toContain(utc(last))
    expect(await page.locator('#publish time').first().getAttribute('title')).toContain(kolkata(last))
    const event = page.locator('#activity li time').first()
    const at = await event.getAttribute('datetime') ?? ''
    expect(await event.innerText()).toBe(`${at.slice(11, 19)}Z`)
    expect(await event.getAttribute('title')).toContain(kolkata(at))
    expect(errors).toEqual([])
  })
})
