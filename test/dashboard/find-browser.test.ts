import { describe, it, expect } from 'vitest'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { runCli } from '../helpers/cli.js'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { bound, until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'
import { hasChromium, launchChromium } from '../helpers/chromium.js'

const launch = launchChromium

const EVIL = '<img src=x onerror="window.__pwned=1">.md'

describe.skipIf(!hasChromium)('the dashboard\'s finder in a real browser', () => {
  it('asks for a sign-in, then searches as you type, shows names as text, browses folders and shows a timeline', async () => {
    const dir = await useTempDir()
    const { port, token, config, notes } = await startInProcessDaemon(dir, '[snapshot]\nquiet_seconds = 3600\nmin_interval_seconds = 3600\n')
    await mkdir(join(notes, 'trips'))
    await writeFile(join(notes, 'trips', 'lisbon-plan.md'), 'alpha')
    await writeFile(join(notes, EVIL), 'beta')
    await until(async () => (await statusOf(port)).index.files === 2 || undefined, 20_000, 'both files indexed')

    const context = await launch()
    const page = await context.newPage()
    const errors: string[] = []
    page.on('console', m => { if (m.type() === 'error' && !/401|403/.test(m.text())) errors.push(m.text()) })
    page.on('pageerror', err => { errors.push(`uncaught: ${err.message}`) })
    const base = `http://127.0.0.1:${port}`
    await page.goto(`${base}/`)
    await page.locator('#find-note').filter({ hasText: 'Sign in to search' }).waitFor({ timeout: bound(10_000) })
    await page.locator('#find-q').fill('plan')
    await page.locator('#find-note.bad').filter({ hasText: 'sign in to search' }).waitFor({ timeout: bound(10_000) })

    const link = (await runCli(['dashboard', '--config', config], { env: { ...process.env, CIDSYNC_CONFIG: config } })).stdout.trim()
    await page.goto(link)
    await until(async () => page.url() === `${base}/` ? true : undefined, 10_000, 'the fragment cleared')

    // Results as you type, each keystroke a request; the last one wins.
    await page.locator('#find-q').pressSequentially('lisb', { delay: 20 })
    await until(async () => (await page.locator('#find-results tbody').innerText()).includes('notes/trips/lisbon-plan.md') ? true : undefined, 10_000, 'the search result')
    expect(await page.locator('#find-results tbody tr').count()).toBe(1)
    expect(await page.locator('#find-results tbody').innerText()).toContain('local-only')

    // A name with markup in it is shown as text: no element made of it, no script run.
    await page.locator('#find-q').fill('onerror')
    await until(async () => (await page.locator('#find-results tbody').innerText()).includes(`notes/${EVIL}`) ? true : undefined, 10_000, 'the odd name')
    expect(await page.locator('#find img').count()).toBe(0)
    expect(await page.evaluate('window.__pwned')).toBeUndefined()

    // Its timeline.
    await page.locator('#find-results a.path').first().click()
    await until(async () => (await page.locator('#find-log tbody tr').count()) === 1 ? true : undefined, 10_000, 'the timeline')
    expect(await page.locator('#find-log-path').innerText()).toBe(`notes/${EVIL}`)
    expect(await page.locator('#find-log tbody').innerText()).toContain('no (local-only)')

    // The browser: folders, then into one, then a file's timeline.
    await page.locator('#browse-list a[data-prefix="notes/"]').waitFor({ timeout: bound(10_000) })
    await page.locator('#browse-list a[data-prefix="notes/"]').click()
    await page.locator('#browse-list a[data-prefix="notes/trips/"]').click()
    await page.locator('#browse-list a[data-path="notes/trips/lisbon-plan.md"]').click()
    await until(async () => (await page.locator('#find-log-path').innerText()) === 'notes/trips/lisbon-plan.md' ? true : undefined, 10_000, 'the browsed file\'s timeline')
    expect(await page.locator('#browse-crumbs').innerText()).toBe('folders / notes / trips')

    // The browser at a past publish: published, then a file added; the past shows it without.
    const published = await until(async () => {
      const answer = await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
      return answer.status === 200 ? JSON.parse(answer.body) as { cid: string } : undefined
    }, 30_000, 'a publish')
    const between = new Date().toISOString()
    await writeFile(join(notes, 'trips', 'porto.md'), 'gamma')
    await until(async () => (await statusOf(port)).index.files === 3 || undefined, 20_000, 'the third file indexed')
    await page.locator('#browse-at').fill(between)
    await page.locator('#browse-at').press('Enter')
    await page.locator('#browse-publish').filter({ hasText: published.cid }).waitFor({ timeout: bound(30_000) })
    await page.locator('#browse-list a[data-prefix="notes/"]').click()
    await page.locator('#browse-list a[data-prefix="notes/trips/"]').click()
    await page.locator('#browse-list a[data-path="notes/trips/lisbon-plan.md"]').waitFor({ timeout: bound(10_000) })
    expect(await page.locator('#browse-list a[data-path="notes/trips/porto.md"]').count()).toBe(0)
    await page.locator('#browse-at').fill('')
    await page.locator('#browse-at').press('Enter')
    await until(async () => (await page.locator('#browse-publish').innerText()) === '' ? true : undefined, 10_000, 'back to now')

    // Round trip from the page: a search answered in well under the 150 ms aimed for (bounded generously here: a busy machine).
    const ms = await page.evaluate(`(async () => { const t = performance.now(); const r = await fetch('/search?q=lisbon', { headers: { 'x-cidsync-csrf': sessionStorage.getItem('cidsync-csrf') } }); await r.json(); return performance.now() - t })()`) as number
    expect(ms).toBeLessThan(2_000)
    expect(errors).toEqual([])
  }, 120_000)
  it('downloads a stored file through the daemon, verified: from the search, the browser and the timeline; a file not stored has no button', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'kept'))
    const content = randomBytes(150_000)
    const name = 'budget <b>"25"<b>.bin'
    await writeFile(join(dir, 'kept', name), content)
    const { port, config, notes } = await startInProcessDaemon(dir, '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n')
    await writeFile(join(notes, 'budget-index-only.txt'), 'not stored')
    await untilReached(port)
    await until(async () => {
      const kept = (await statusOf(port)).content?.folders.find(f => f.folder === 'kept')
      return kept?.protected.files === 1 && kept.pending.files === 0 ? kept : undefined
    }, 60_000, 'the file stored')
    await until(async () => (await statusOf(port)).index.files === 2 || undefined, 20_000, 'both files indexed')

    const context = await launch()
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', err => { errors.push(`uncaught: ${err.message}`) })
    const link = (await runCli(['dashboard', '--config', config], { env: { ...process.env, CIDSYNC_CONFIG: config } })).stdout.trim()
    await page.goto(link)
    await until(async () => page.url() === `http://127.0.0.1:${port}/` ? true : undefined, 10_000, 'the fragment cleared')

    await page.locator('#find-q').fill('budget')
    await until(async () => (await page.locator('#find-results tbody tr').count()) === 2 ? true : undefined, 10_000, 'both results')
    // Only the stored one offers a download.
    expect(await page.locator('#find-results button.download').count()).toBe(1)
    const row = page.locator('#find-results tbody tr').filter({ hasText: `kept/${name}` })
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: bound(60_000) }), row.locator('button.download').click()])
    // Named after the file (Chromium replaces the characters it will not save under).
    expect(download.suggestedFilename()).toMatch(/^budget .*25.*\.bin$/)
    expect((await readFile(await download.path())).equals(content)).toBe(true)
    await page.locator('#find-download').filter({ hasText: 'verified against its CID' }).waitFor({ timeout: bound(10_000) })
    // The token never travels in a URL.
    expect(download.url()).toMatch(/^blob:/)

    // The timeline's version and the browser's file offer it too.
    await row.locator('a.path').click()
    await page.locator('#find-log button.download').waitFor({ timeout: bound(10_000) })
    const [fromLog] = await Promise.all([page.waitForEvent('download', { timeout: bound(60_000) }), page.locator('#find-log button.download').first().click()])
    expect((await readFile(await fromLog.path())).equals(content)).toBe(true)
    await page.locator('#browse-list a[data-prefix="kept/"]').click()
    const item = page.locator('#browse-list li').filter({ hasText: name })
    await item.locator('button.download').waitFor({ timeout: bound(10_000) })
    const [fromBrowse] = await Promise.all([page.waitForEvent('download', { timeout: bound(60_000) }), item.locator('button.download').click()])
    expect((await readFile(await fromBrowse.path())).equals(content)).toBe(true)
    expect(await page.locator('#find b').count()).toBe(0)
    expect(errors).toEqual([])
  }, 180_000)
})
