import { describe, it, expect } from 'vitest'
import { mkdirSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type ConsoleMessage, type Page } from 'playwright-core'
import { useTempDir } from '../helpers/temp-dir.js'
import { runCli } from '../helpers/cli.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { bound, until } from '../helpers/wait.js'
import { formatBytes } from '../../src/util/format-bytes.js'
import { CHROMIUM, hasChromium, launchChromium } from '../helpers/chromium.js'

const ARTIFACTS = join(process.cwd(), 'test-artifacts')
if (!hasChromium) console.warn(`skipping the dashboard browser test: ${CHROMIUM} is not installed (apt-get install chromium; .ci/run installs it)`)
const launch = launchChromium

/** Console errors and uncaught exceptions, except the refusals the test provokes on purpose. */
function watchConsole (page: Page, expected: (message: ConsoleMessage) => boolean): string[] {
  const errors: string[] = []
  page.on('console', message => { if (message.type() === 'error' && !expected(message)) errors.push(`${message.text()} (${message.location().url})`) })
  page.on('pageerror', err => { errors.push(`uncaught: ${err.message}`) })
  return errors
}

/** The page's getComputedStyle, typed for `evaluate` callbacks (these tests compile without the DOM's types). */
type StyleOf = (element: unknown, pseudo?: string) => { listStyleType: string, content: string }

async function text (page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).innerText()).trim()
}

describe.skipIf(!hasChromium)(`the dashboard in a real browser (${CHROMIUM})`, () => {
  it('shows every section with real data, updates live, and acts only after the login link', async () => {
    const dir = await useTempDir()
    // No publish on its own during the test: the one after the login is the button's.
    const { daemon, port, token, config, notes } = await startInProcessDaemon(dir, `[snapshot]
quiet_seconds = 3600
min_interval_seconds = 3600
ipns_key = "auto"
[[folders]]
name = "usb"
path = "unplugged-disk"
`)
    await writeFile(join(notes, 'a.md'), 'alpha')
    await writeFile(join(notes, 'b.md'), 'beta, a little longer'.repeat(100))
    // Both indexed before the reconciliation that counts the account's side (slow on a loaded machine).
    await until(async () => (await statusOf(port)).index.files === 2 || undefined, 20_000, 'both files indexed')
    await untilReached(port)
    // A first publish by the CLI's way (the token), so the publish section has one to show.
    const first = JSON.parse((await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })).body) as { cid: string }
    await httpGet({ port }, '/reconcile', { method: 'POST', headers: { authorization: `Bearer ${token}` } })

    const context = await launch({ width: 1200, height: 900 })
    const page = await context.newPage()
    const base = `http://127.0.0.1:${port}`
    const errors = watchConsole(page, () => false)
    await page.goto(`${base}/`)
    await page.locator('#live.ok').waitFor({ timeout: bound(10_000) })

    // Every section, from the daemon's own status.
    const notesRow = page.locator('#folders tr[data-folder="notes"]')
    await until(async () => (await notesRow.locator('.entries').innerText()) === '2' ? true : undefined, 10_000, 'two entries shown')
    expect(await notesRow.innerText()).toContain('watching')
    const usb = await text(page, '#folders tr[data-folder="usb"]')
    expect(usb).toContain('error')
    expect(usb).toContain('what to do: mount or create the folder')
    expect(await text(page, '#publish')).toContain(first.cid.slice(0, 10))
    expect(await text(page, '#publish')).toMatch(/pointer.*in sync/s)
    // The IPNS name in use: the key made for ipns_key = "auto", as /ipns/ID.
    const ipns = (await statusOf(port)).publish?.ipns
    expect(ipns).toMatchObject({ key: 'auto', id: expect.stringMatching(/^k51/), cid: first.cid })
    const id = ipns?.id ?? ''
    expect(await text(page, '#publish')).toMatch(new RegExp(`IPNS name\\s+/ipns/${id.slice(0, 10)}…${id.slice(-6)} key ${(ipns?.name ?? '').slice(0, 8)}… → ${first.cid.slice(0, 10)}`))
    expect(await page.locator('#publish .ipns-id').getAttribute('title')).toBe(`/ipns/${id}`)
    // Sizes as the CLI shows them: binary units, one helper's way.
    const bytes = (await statusOf(port)).folders.find(f => f.name === 'notes')?.bytes ?? 0
    expect(bytes).toBeGreaterThan(1024)
    expect(await notesRow.locator('td.num').last().innerText()).toBe(formatBytes(bytes))
    expect(formatBytes(bytes)).toMatch(/^\d+(\.\d)? KiB$/)
    expect(await text(page, '#restorable')).toContain('not checked yet')
    // The history: the first publish, from the manifest this device wrote (nothing fetched).
    await until(async () => (await text(page, '#history')).includes(first.cid.slice(0, 10)) ? true : undefined, 10_000, 'the first publish in the history')
    // Each publish asks a deal for its segments and its manifest (how many publishes ran by now depends on timing).
    expect(await text(page, '#deals')).toMatch(/pending\s+[1-9]/)
    expect(await text(page, '#account')).toMatch(/local only\s+2/)
    expect(await text(page, '#errors')).toBeTruthy()
    expect(await page.locator('#publish-now').isDisabled()).toBe(true)
    // Not signed in: the page says how.
    expect(await page.locator('#signin-help').isVisible()).toBe(true)

    // A file added appears without a reload.
    await page.evaluate('window.__sameDocument = true')
    await writeFile(join(notes, 'c.md'), 'gamma')
    await until(async () => (await notesRow.locator('.entries').innerText()) === '3' ? true : undefined, 10_000, 'the new file to appear')
    expect(await page.evaluate('window.__sameDocument')).toBe(true)
    expect(await text(page, '#activity')).toContain('index.batch')

    // Not signed in: the page cannot act, whatever it sends.
    const refused = await httpGet({ port }, '/snapshot', { method: 'POST', headers: { origin: base } })
    expect(refused.status).toBe(401)

    // Signed in through the link `cidsync dashboard` prints.
    const cli = await runCli(['dashboard', '--config', config], { env: { ...process.env, CIDSYNC_CONFIG: config } })
    expect(cli.code).toBe(0)
    const link = cli.stdout.trim()
    expect(link).toMatch(new RegExp(`^${base}/login\\?code=[\\w-]+$`))
    await page.goto(link)
    // The fragment that carried the CSRF token is gone from the address once the page took it.
    await until(async () => page.url() === `${base}/` ? true : undefined, 10_000, 'the fragment cleared')
    await page.locator('#publish-now:enabled').waitFor({ timeout: bound(10_000) })
    // Signed in: no longer told how to sign in.
    expect(await page.locator('#signin-help').isVisible()).toBe(false)
    // A publish that failed before: listed until the button's publish goes through.
    daemon.recordError('publish failed', 'ERR_REMOTE_NETWORK', 'the service could not be reached', 'publish')
    await until(async () => (await text(page, '#errors .current')).includes('publish failed') ? true : undefined, 10_000, 'the failed publish listed')
    // The daemon's `error` event is news on a stream that is fine: the page still says live.
    await until(async () => (await text(page, '#activity')).includes('publish failed: the service could not be reached') ? true : undefined, 10_000, 'the error event')
    expect(await text(page, '#live')).toBe('live')
    expect(await page.locator('#errors .resolved').isVisible()).toBe(false)
    await page.locator('#publish-now').click()
    await until(async () => (await text(page, '#action-result')).startsWith('publish: done') ? true : undefined, 20_000, 'the publish to finish')
    const published = (await statusOf(port)).publish?.last?.cid as string
    expect(published).not.toBe(first.cid)
    // The answer in words. The daemon may have published the new file on its own before the click
    // (its debounce ran first on a slow machine): then the button's publish found nothing new.
    const result = await text(page, '#action-result')
    expect([`publish: done: published ${published} (3 entries)`, `publish: done: nothing new here since the last snapshot, ${published} (3 entries)`]).toContain(result)
    await until(async () => (await text(page, '#errors .current')) === 'none' ? true : undefined, 10_000, 'the failed publish to leave the current errors')
    await page.locator('#errors .resolved summary').click()
    expect(await text(page, '#errors .resolved')).toMatch(/^1 resolved recently\n.*publish failed \[ERR_REMOTE_NETWORK\] resolved /s)
    await until(async () => (await text(page, '#publish')).includes(published.slice(0, 10)) ? true : undefined, 10_000, 'the new publish to show')
    await until(async () => (await text(page, '#activity')).includes('publish.done') ? true : undefined, 10_000, 'publish.done in the live events')
    // The history gains a row, newest first, without a reload.
    await until(async () => (await page.locator('#history tbody tr').count()) === 2 ? true : undefined, 10_000, 'the history to gain a row')
    expect(await text(page, '#history tbody tr:first-child')).toContain(published.slice(0, 10))

    // Verify: a restore drill of what the pointer names; the page shows it restorable.
    await page.locator('#verify-now').click()
    await until(async () => (await text(page, '#restorable')).includes('yes: the last drill restored') ? true : undefined, 30_000, 'the drill to show restorable').catch(async (err: Error) => { throw new Error(`${err.message}: ${await text(page, '#action-result')} / ${await text(page, '#restorable')}`) })
    await until(async () => (await text(page, '#activity')).includes('drill') ? true : undefined, 10_000, 'the drill in the live events')
    expect(await text(page, '#activity li[data-type="drill"]')).toMatch(new RegExp(`drill restore drill: ${published} restores \\(\\d+ segments\\)`))
    await until(async () => (await text(page, '#action-result')).startsWith('verify: done') ? true : undefined, 10_000, 'the verify answer')
    expect(await text(page, '#action-result')).toMatch(new RegExp(`^verify: done: restorable: ${published} and its \\d+ segments fetched, verified and opened$`))

    // The live events: more than nine, each line whole, starting with its time (nothing cut at the list's edge).
    const events = page.locator('#activity li')
    expect(await events.count()).toBeGreaterThan(9)
    const edge = await page.locator('#activity ol').evaluate(ol => ol.getBoundingClientRect().left)
    for (let i = 0; i < 12 && i < await events.count(); i++) {
      expect(await events.nth(i).innerText()).toMatch(/^\d\d:\d\d:\d\dZ \S+ /)
      expect(await events.nth(i).evaluate(li => li.getBoundingClientRect().left)).toBeGreaterThanOrEqual(edge)
      // No marker drawn outside the text (where a list number used to be cut off).
      expect(await events.nth(i).evaluate(li => (globalThis as unknown as { getComputedStyle: StyleOf }).getComputedStyle(li).listStyleType)).toBe('none')
    }

    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true })

    // The same daemon under another name for its Host is another origin: the cookie is not for it.
    const other = await context.newPage()
    await other.goto(`http://localhost:${port}/`)
    await other.locator('#signin').filter({ hasText: 'read only' }).waitFor({ timeout: bound(10_000) })
    expect(await other.locator('#publish-now').isDisabled()).toBe(true)
    await other.close()

    // Foreign Host and Origin are refused outright.
    expect((await httpGet({ port }, '/', { host: 'evil.example' })).status).toBe(403)
    expect((await httpGet({ port }, '/snapshot', { method: 'POST', host: 'evil.example', headers: { authorization: `Bearer ${token}` } })).status).toBe(403)
    expect((await httpGet({ port }, '/session', { headers: { origin: 'http://evil.example' } })).status).toBe(403)

    expect(errors).toEqual([])
  })

  it('fits a phone-sized screen, the history table included', async () => {
    const dir = await useTempDir()
    const { port, token, notes } = await startInProcessDaemon(dir, '[snapshot]\nquiet_seconds = 3600\nmin_interval_seconds = 3600\n')
    await writeFile(join(notes, 'a-file-with-a-rather-long-name-that-could-push-the-layout-sideways.md'), 'x')
    await until(async () => (await statusOf(port)).index.files === 1 || undefined, 20_000, 'the file indexed')
    await untilReached(port)
    const { cid } = JSON.parse((await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })).body) as { cid: string }
    const context = await launch({ width: 390, height: 844 })
    const page = await context.newPage()
    const errors = watchConsole(page, () => false)
    await page.goto(`http://127.0.0.1:${port}/`)
    await page.locator('#live.ok').waitFor({ timeout: bound(10_000) })
    await until(async () => (await page.locator('#folders .entries').first().innerText()) === '1' ? true : undefined, 10_000, 'the folder shown')
    expect(await text(page, '#publish')).toContain(' · 1 entry · ')
    const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth') as number
    expect(overflow).toBeLessThanOrEqual(0)
    // The history: each publish readable whole, no column off to the side to scroll to.
    const row = page.locator('#history tbody tr').first()
    await until(async () => (await row.innerText()).includes(cid.slice(0, 10)) ? true : undefined, 10_000, 'the publish in the history')
    const scroll = await page.locator('#history .scroll').evaluate(s => ({ scroll: s.scrollWidth, client: s.clientWidth }))
    expect(scroll.scroll).toBeLessThanOrEqual(scroll.client)
    const width = await page.evaluate('window.innerWidth') as number
    // Measured in one pass in the page: the row is drawn again as its ages tick, and a cell
    // measured from here between two draws would be one that is gone.
    type Rect = { x: number, right: number }
    const boxes = await row.locator('td').evaluateAll(cells => cells.map(c => (c as unknown as { getBoundingClientRect: () => Rect }).getBoundingClientRect()).map(r => ({ x: r.x, right: r.right })))
    expect(boxes).toHaveLength(6)
    for (const box of boxes) {
      expect(box.x).toBeGreaterThanOrEqual(0)
      expect(box.right).toBeLessThanOrEqual(width)
    }
    // Each line says what it is (the column heads are gone).
    const labels = await row.locator('td').evaluateAll(cells => cells.map(c => (globalThis as unknown as { getComputedStyle: StyleOf }).getComputedStyle(c, '::before').content))
    expect(labels).toEqual(['"time"', '"device"', '"entries"', '"bytes added"', '"snapshot"', '"deal"'])
    mkdirSync(ARTIFACTS, { recursive: true })
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-phone.png'), fullPage: true })
    expect(errors).toEqual([])
  })
})
