import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { bound, until } from '../helpers/wait.js'
import { hasChromium, launchChromium } from '../helpers/chromium.js'

async function publish (port: number, token: string): Promise<string> {
  const answer = await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
  expect(answer.status, answer.body).toBe(200)
  return (JSON.parse(answer.body) as { cid: string }).cid
}

describe.skipIf(!hasChromium)('the dashboard\'s live events in a real browser', () => {
  it('lets the page finish loading, then lists what the daemon did before and does after, each event once', async () => {
    const dir = await useTempDir()
    // No scheduled publish: one at the half hour would come before this test's own.
    const { port, token, notes } = await startInProcessDaemon(dir, '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 3600\nmin_interval_seconds = 3600\n')
    await writeFile(join(notes, 'a.md'), 'alpha')
    await until(async () => (await statusOf(port)).index.files === 1 || undefined, 20_000, 'a.md indexed')
    await untilReached(port)
    // Published before the page opens: a list that starts empty on an idle daemon never shows it.
    const before = await publish(port, token)

    const context = await launchChromium()
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', err => { errors.push(err.message) })
    // The browser's own lifecycle, as a headless screenshot tool waits on it: the network goes
    // idle (nothing in flight for 500 ms) only if the stream is not opened while the page loads.
    const cdp = await context.newCDPSession(page)
    await cdp.send('Page.enable')
    await cdp.send('Page.setLifecycleEventsEnabled', { enabled: true })
    const lifecycle: string[] = []
    // `init` starts a document's events: what about:blank said before is dropped.
    cdp.on('Page.lifecycleEvent', event => {
      if (event.name === 'init') lifecycle.length = 0
      lifecycle.push(event.name)
    })
    await page.goto(`http://127.0.0.1:${port}/`, { waitUntil: 'commit' })
    await until(() => (lifecycle.includes('load') && lifecycle.includes('networkIdle')) || undefined, 10_000, 'the page to load and the network to go idle').catch((err: Error) => { throw new Error(`${err.message} (lifecycle: ${lifecycle.join(', ')})`) })
    await page.locator('#live.ok').waitFor({ timeout: bound(10_000) })

    const done = page.locator('#activity li[data-type="publish.done"]')
    await until(async () => (await done.count()) > 0 || undefined, 10_000, 'the publish from before the page opened')
    expect(await done.first().innerText()).toContain(`published ${before} (1 entries)`)
    expect(await page.locator('#activity .empty').isVisible()).toBe(false)

    // One the daemon makes now arrives live.
    await writeFile(join(notes, 'b.md'), 'beta')
    await until(async () => (await statusOf(port)).index.files === 2 || undefined, 20_000, 'b.md indexed')
    const after = await publish(port, token)
    await until(async () => (await done.first().innerText()).includes(`published ${after} (2 entries)`) || undefined, 10_000, 'the publish made while the page is open')
    expect(await done.count()).toBe(2)
    // Each event once, newest first, however it came (the backlog or the stream).
    const ids = (await page.locator('#activity li').allInnerTexts()).map(text => Number(/#(\d+)$/.exec(text)?.[1]))
    expect(ids.every(id => id > 0)).toBe(true)
    expect(ids).toEqual([...new Set(ids)].sort((a, b) => b - a))

    // A full-page screenshot with the network idle finishes too.
    const again = await context.newPage()
    await again.goto(`http://127.0.0.1:${port}/`, { waitUntil: 'networkidle', timeout: bound(15_000) })
    expect((await again.screenshot({ fullPage: true })).length).toBeGreaterThan(0)
    expect(errors).toEqual([])
  })
})
