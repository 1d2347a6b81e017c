import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { runCli } from '../helpers/cli.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { bound, until } from '../helpers/wait.js'
import { hasChromium, launchChromium } from '../helpers/chromium.js'

describe.skipIf(!hasChromium)('the dashboard\'s restore drill in words', () => {
  it('says "1 segment", not "1 segments", for a pointer of one publish', async () => {
    const dir = await useTempDir()
    const { daemon, port, token, config, notes } = await startInProcessDaemon(dir, `[snapshot]
quiet_seconds = 3600
min_interval_seconds = 3600
`)
    await writeFile(join(notes, 'a.md'), 'alpha')
    await until(async () => (await statusOf(port)).index.files === 1 || undefined, 20_000, 'a.md indexed')
    await untilReached(port)
    await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })

    const page = await (await launchChromium()).newPage()
    const cli = await runCli(['dashboard', '--config', config])
    expect(cli.code, cli.stderr).toBe(0)
    await page.goto(cli.stdout.trim())
    await page.locator('#live.ok').waitFor({ timeout: bound(10_000) })
    await page.locator('#verify-now:enabled').waitFor({ timeout: bound(10_000) })
    await page.locator('#verify-now').click()
    const result = page.locator('#action-result')
    await until(async () => (await result.innerText()).startsWith('verify: done') || undefined, 30_000, 'the verify answer')
    expect(await result.innerText()).toMatch(/ and its 1 segment fetched, verified and opened$/)
    const drill = page.locator('#activity li[data-type="drill"]')
    await until(async () => (await drill.count()) > 0 || undefined, 10_000, 'the drill in the live events')
    expect(await drill.first().innerText()).toMatch(/ restores \(1 segment\)/)
    await daemon.stop()
  }, 120_000)
})
