import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'
import { onTestFinished } from 'vitest'

/** Debian's chromium (`.ci/run` installs it); the page tests skip, saying so, without it. */
export const CHROMIUM = '/usr/bin/chromium'
export const hasChromium = existsSync(CHROMIUM)

/** Where the browser thinks it is: a time zone and a locale other than the machine's. */
export interface BrowserPlace { readonly timezoneId?: string, readonly locale?: string }

/**
 * A headless Chromium with a profile of its own, closed and its profile removed when the test
 * finishes (an `afterEach` registered inside a running test would never run for it).
 */
export async function launchChromium (viewport: { width: number, height: number } = { width: 1200, height: 900 }, place: BrowserPlace = {}): Promise<BrowserContext> {
  const profile = await mkdtemp(join(tmpdir(), 'cidsync-chromium-'))
  onTestFinished(async () => { await rm(profile, { recursive: true, force: true, maxRetries: 3 }) })
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    ...place,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  onTestFinished(async () => { await context.close() })
  return context
}
