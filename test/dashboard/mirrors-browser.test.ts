import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { bound, until } from '../helpers/wait.js'
import { proofDir, status, statusOf } from '../proof/harness.js'
import { hasChromium, launchChromium } from '../helpers/chromium.js'
import { mirroredDevice, publishNow, startHome, stopHome } from '../cli/mirror-helpers.js'

describe.skipIf(!hasChromium)('the dashboard\'s mirrors section in a real browser', () => {
  it('shows each mirror caught up with its last publish, then behind with the error and what to do while it is down', async () => {
    const root = await proofDir()
    const primary = await startHome(join(root, 'primary'))
    const mirror = await startHome(join(root, 'mirror'))
    const d = await mirroredDevice(root, 'a', primary, mirror)
    const daemon = new DaemonProcess(['--config', d.config], { env: { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500' } })
    await daemon.logged('service ready', 60_000)
    await writeFile(join(d.kept, 'a.txt'), 'a')
    await until(async () => (await status(d)).index.files === 1 ? true : undefined, 30_000, 'a.txt indexed')
    const first = await publishNow(d)
    await until(async () => (await status(d)).mirrors[0]?.lastPublish?.cid === first ? true : undefined, 60_000, 'the mirror caught up')

    const context = await launchChromium()
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', err => { errors.push(err.message) })
    await page.goto(`http://127.0.0.1:${(await statusOf(d)).port}/`)
    await page.locator('#live.ok').waitFor({ timeout: bound(10_000) })
    const row = page.locator('#mirrors tbody tr[data-mirror="nas"]')
    await until(async () => (await row.count()) === 1 ? true : undefined, 10_000, 'the mirror in the mirrors section')
    expect(await page.locator('#mirrors').isVisible()).toBe(true)
    expect(await row.locator('.behind').innerText()).toBe('0')
    expect(await row.locator('.lag').innerText()).toBe('caught up')
    expect(await row.innerText()).toContain(first.slice(0, 10))

    await stopHome(mirror)
    await writeFile(join(d.kept, 'b.txt'), 'b')
    await until(async () => (await status(d)).index.files === 2 ? true : undefined, 30_000, 'b.txt indexed')
    await publishNow(d)
    await until(async () => (await row.locator('.behind').innerText()) !== '0' && (await page.locator('#mirrors .problems li').count()) > 0 ? true : undefined, 60_000, 'the mirror shown behind, with its error')
    expect(await row.locator('.lag').innerText()).toMatch(/oldest waiting \d+/)
    const problem = await page.locator('#mirrors .problems li').first().innerText()
    expect(problem).toContain('nas: copying failed')
    expect(problem).toContain('what to do: the mirror does not answer')
    expect(errors).toEqual([])
    await daemon.stop()
    await stopHome(primary)
  }, 300_000)
})
