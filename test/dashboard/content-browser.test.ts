import { describe, it, expect } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { bound, until } from '../helpers/wait.js'
import { admin, proofDir, remoteDevice, serviceProcess, status, statusOf } from '../proof/harness.js'
import { hasChromium, launchChromium } from '../helpers/chromium.js'

const launch = launchChromium

const EVIL = '<img src=x onerror="window.__pwned=1">.txt'

describe.skipIf(!hasChromium)('the dashboard\'s content section in a real browser', () => {
  it('shows per folder what is protected, pending and failed, and each failed file with why and what to do, its name as text', async () => {
    const root = await proofDir()
    const service = await serviceProcess(join(root, 'service'))
    const d = await remoteDevice(root, 'a', service, { extra: '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\n[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n' })
    await mkdir(join(d.root, 'kept'))
    await writeFile(join(d.root, 'kept', 'ok.txt'), 'stored fine')
    const daemon = new DaemonProcess(['--config', d.config])
    await daemon.logged('service ready', 30_000)
    await until(async () => (await status(d)).content?.folders?.[0]?.protected.files === 1 ? true : undefined, 60_000, 'ok.txt stored')
    expect((await admin(service.url, service.dir, 'PUT', '/local/faults', { upload: { errorRate: 1, status: 400 } })).status).toBe(200)
    await writeFile(join(d.root, 'kept', EVIL), 'refused')
    await until(async () => (await status(d)).content?.failures?.length === 1 ? true : undefined, 60_000, 'the upload failed')

    const context = await launch()
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', err => { errors.push(err.message) })
    await page.goto(`http://127.0.0.1:${(await statusOf(d)).port}/`)
    await page.locator('#live.ok').waitFor({ timeout: bound(10_000) })
    const row = page.locator('#content tbody tr[data-folder="kept"]')
    await until(async () => (await row.count()) === 1 ? true : undefined, 10_000, 'the kept folder in the content section')
    expect(await row.locator('.protected').innerText()).toBe('1')
    expect(await row.locator('.pending').innerText()).toBe('1')
    expect(await row.locator('.failed').innerText()).toBe('1')
    expect(await page.locator('#content .summary').innerText()).toMatch(/upload rate .*\/s · .* uploaded since start · 0 B saved by dedup · last pass /)
    const failure = await page.locator('#content .failures li').first().innerText()
    expect(failure).toContain(`kept/${EVIL}`)
    expect(failure).toContain('400')
    expect(failure).toContain('what to do: it is tried again')
    expect(await page.locator('#content img').count()).toBe(0)
    expect(await page.evaluate('window.__pwned')).toBeUndefined()
    expect(errors).toEqual([])
    await daemon.stop()
  }, 180_000)
})
