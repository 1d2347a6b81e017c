import { describe, it, expect, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { admin, post, proofDir, status, statusOf } from '../proof/harness.js'
import { hasChromium, launchChromium } from '../helpers/chromium.js'
import { mirroredDevice, publishNow, startHome, stopHome } from '../cli/mirror-helpers.js'

const occurrences = (text: string, part: string): number => text.split(part).length - 1

describe.skipIf(!hasChromium)('the dashboard\'s errors in a real browser', () => {
  it('lists a failure repeated once, counted, and says a mirror\'s advice once (status too)', async () => {
    const root = await proofDir()
    const primary = await startHome(join(root, 'primary'))
    const mirror = await startHome(join(root, 'mirror'))
    onTestFinished(async () => { await stopHome(mirror); await stopHome(primary) })
    const d = await mirroredDevice(root, 'a', primary, mirror)
    const daemon = new DaemonProcess(['--config', d.config], { env: { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500' } })
    onTestFinished(async () => { await daemon.stop() })
    await daemon.logged('service ready', 60_000)
    await writeFile(join(d.kept, 'a.txt'), 'a')
    await until(async () => (await status(d)).index.files === 1 ? true : undefined, 30_000, 'a.txt indexed')

    // The primary fails every pointer move: three publishes, three failures of the same kind.
    expect((await admin(primary.url, primary.dir, 'PUT', '/local/faults', { pointers_put: { errorRate: 1, status: 500 } })).status).toBe(200)
    for (let i = 0; i < 3; i++) expect((await post(d, '/snapshot')).status).toBe(502)
    // At least three: the daemon may retry a failed publish on its own as well.
    await until(async () => ((await status(d)).lastErrors.find((e: { message: string }) => e.message === 'publish failed')?.count ?? 0) >= 3 ? true : undefined, 30_000, 'three failures counted')

    const context = await launchChromium()
    const page = await context.newPage()
    const pageErrors: string[] = []
    page.on('pageerror', err => { pageErrors.push(err.message) })
    await page.goto(`http://127.0.0.1:${(await statusOf(d)).port}/`)
    await page.locator('#live.ok').waitFor({ timeout: 10_000 })
    const failed = page.locator('#errors .current li', { hasText: 'publish failed' })
    await until(async () => (await failed.count()) === 1 ? true : undefined, 10_000, 'the failure listed')
    expect(Number(/×(\d+) since .*ago/.exec(await failed.innerText())?.[1])).toBeGreaterThanOrEqual(3)
    expect(occurrences(await page.locator('#errors .current').innerText(), 'publish failed')).toBe(1)

    // The mirror's saved credential no longer matches its URLs: the message says to sign in again; the advice is not said twice.
    await admin(primary.url, primary.dir, 'DELETE', '/local/faults')
    await writeFile(join(d.state, 'mirrors', 'nas', 'bound-to'), '{}\n', { mode: 0o600 })
    await publishNow(d)
    await until(async () => (await status(d)).mirrors[0]?.lastError?.code === 'ERR_MIRROR_CREDENTIAL_UNBOUND' ? true : undefined, 60_000, 'the mirror refusing the credential')
    const problem = page.locator('#mirrors .problems li[data-mirror="nas"]').first()
    await until(async () => (await problem.count()) > 0 && (await problem.innerText()).includes('ERR_MIRROR_CREDENTIAL_UNBOUND') ? true : undefined, 20_000, 'the mirror problem shown')
    expect(occurrences(await problem.innerText(), 'cidsync login --mirror nas')).toBe(1)
    const text = await runCli(['status', '--config', d.config])
    const line = text.stdout.split('\n').find(l => l.startsWith('mirror nas: copying failed')) ?? ''
    expect(line).toContain('ERR_MIRROR_CREDENTIAL_UNBOUND')
    expect(occurrences(line, 'cidsync login --mirror nas')).toBe(1)
    expect(pageErrors).toEqual([])
  }, 300_000)
})
