import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { bound } from '../helpers/wait.js'
import { device, ok, proofDir, statusOf, type Device } from '../proof/harness.js'
import { hasChromium, launchChromium } from '../helpers/chromium.js'

/** Schedules that never fire (forget and prune run from the CLI here); a policy that keeps one publish. */
const EXTRA = '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\nmin_interval_seconds = 0\ndeal = false\ncompact_after_deltas = 1\n' +
  '[reconcile]\nschedule = "0 0 1 1 *"\n[verify]\nschedule = ""\n[retention]\nkeep_last = 1\nprune_margin = "0s"\nschedule = "0 0 1 1 *"\n'

async function snapshot (d: Device, file: string, at: string): Promise<void> {
  await writeFile(join(d.folder, file), `${file}\n`)
  await ok(['snapshot', '--config', d.config], { env: { ...process.env, CIDSYNC_TEST_CLOCK: at } })
}

describe.skipIf(!hasChromium)('the dashboard\'s retention card in a real browser', () => {
  it('shows the last forget, what the account held and a prune would free with when it was counted, and that a later forget made it old', async () => {
    const root = await proofDir()
    const d = await device(root, 'a', { extra: EXTRA })
    for (const [i, at] of ['2026-03-01T01:00:00.000Z', '2026-03-01T02:00:00.000Z', '2026-03-01T03:00:00.000Z'].entries()) await snapshot(d, `f${i}.md`, at)
    await ok(['forget', '--config', d.config])
    const dry = JSON.parse((await ok(['prune', '--dry-run', '--json', '--config', d.config])).stdout) as { deleted: Record<string, number>, held: { objects: number } }
    const wouldFree = Object.values(dry.deleted).reduce((n, c) => n + c, 0)
    // A forget after the count: the figure is older than the history it counted.
    await snapshot(d, 'f3.md', '2026-03-01T04:00:00.000Z')
    await ok(['forget', '--config', d.config])

    const daemon = new DaemonProcess(['--config', d.config])
    try {
      await daemon.logged('service ready', 60_000)
      expect((await ok(['status', '--config', d.config])).stdout).toContain('retention: a forget ran after that count, so a prune may free more: `cidsync prune --dry-run` counts again')
      const context = await launchChromium()
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', err => { errors.push(err.message) })
      await page.goto(`http://127.0.0.1:${(await statusOf(d)).port}/`)
      await page.locator('#live.ok').waitFor({ timeout: bound(10_000) })
      await page.locator('#retention .would-free').waitFor({ timeout: bound(10_000) })
      expect(await page.locator('#retention').isVisible()).toBe(true)
      expect(await page.locator('#retention .forget').innerText()).toMatch(/^kept 1 publish, forgot 1, linked \d+ anew · 20\d\d-\d\d-\d\d \d\d:\d\d:\d\dZ \(.+ ago\)$/)
      expect(await page.locator('#retention .held').innerText()).toMatch(new RegExp(`^${dry.held.objects} objects \\(.+\\) · counted by a dry run 20\\d\\d-`))
      const free = page.locator('#retention .would-free')
      expect(await free.innerText()).toMatch(new RegExp(`^${wouldFree} objects \\(.+\\) · as of 20\\d\\d-`))
      expect(await free.locator('.stale').innerText()).toBe('a forget ran after this count, so a prune may free more: cidsync prune --dry-run counts again')
      expect(await page.locator('#retention dd').filter({ hasText: 'none yet' }).count()).toBe(1)
      expect(errors).toEqual([])
    } finally {
      await daemon.stop()
    }
  }, 300_000)
})
