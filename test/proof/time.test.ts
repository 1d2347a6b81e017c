import { describe, it, expect } from 'vitest'
import { rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { admin, device, expectIndexEqualsFolder, limit, ok, proofDir, report, rows, seeded, shareKey, size, status, type Device } from './harness.js'

/**
 * Time: the embedded service's session token made to live seconds instead of a week, publishes
 * and reconciles every few seconds, and meanwhile outages (every request failing), unmounts (the
 * folder renamed away and back) and restarts. A week-long token renewed at half its life is about
 * nine renewals a month; CI goes through as many expiries, full through hundreds. It must end
 * current and publishing.
 */
const TTL_SECONDS = 2
const RUN_MS = size(20_000, 360_000)
/** Every route of the service down (the admin routes are left alone: the faults suite covers them). */
const OUTAGE = Object.fromEntries(['add_cid', 'deal_status', 'files_uploaded', 'generate_key', 'publish_record', 'get_ipns_records', 'pointers_put', 'pointers_get', 'upload', 'gateway', 'gateway_ipns']
  .map(route => [route, { errorRate: 1, status: 503 }]))

function env (): NodeJS.ProcessEnv {
  // The token lifetime knob (helper "guards" names it CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS), and the
  // embedded service's admin routes served so that faults can be injected.
  return { ...process.env, CIDSYNC_EMBEDDED_TOKEN_TTL_SECONDS: String(TTL_SECONDS), CIDSYNC_LOCAL_TOKEN_TTL_SECONDS: String(TTL_SECONDS), CIDSYNC_EMBEDDED_ADMIN: '1' }
}

async function start (a: Device): Promise<{ daemon: DaemonProcess, url: string }> {
  const daemon = new DaemonProcess(['--config', a.config], { env: env() })
  const ready = await daemon.logged('service ready', 30_000) as { service: string }
  return { daemon, url: /http:\/\/127\.0\.0\.1:\d+/.exec(ready.service)?.[0] as string }
}

describe('proof: time', () => {
  it('through many token expiries, outages, unmounts and restarts, the daemon ends current and publishing', async () => {
    const rng = seeded('time')
    const root = await proofDir()
    const serviceDir = join(root, 'service')
    const a = await device(root, 'a', { extra: '[snapshot]\nschedule = "*/2 * * * * *"\nquiet_seconds = 1\nmin_interval_seconds = 0\n[reconcile]\nschedule = "*/3 * * * * *"\n' })
    await writeFile(join(a.folder, 'first.txt'), 'first')
    let { daemon, url } = await start(a)
    const logs: string[] = []
    const events = { writes: 0, outages: 0, unmounts: 0, restarts: 0, faultsRefused: 0 }
    const started = Date.now()
    for (let tick = 0; Date.now() - started < RUN_MS; tick++) {
      await writeFile(join(a.folder, `tick-${tick % 20}.txt`), `tick ${tick} ${rng.next()}`)
      events.writes++
      const what = rng.int(10)
      if (what === 0) {
        const set = await admin(url, serviceDir, 'PUT', '/local/faults', OUTAGE).catch(() => ({ status: 0 }))
        if (set.status !== 200) events.faultsRefused++
        await new Promise(resolve => setTimeout(resolve, 2_500))
        await admin(url, serviceDir, 'DELETE', '/local/faults').catch(() => undefined)
        events.outages++
      } else if (what === 1) {
        await rename(a.folder, `${a.folder}.away`)
        await new Promise(resolve => setTimeout(resolve, 1_500))
        await rename(`${a.folder}.away`, a.folder)
        events.unmounts++
      } else if (what === 2 && events.restarts < size(1, 10)) {
        expect((await daemon.stop()).code, daemon.stderr.split('\n').slice(-5).join('\n')).toBe(0)
        logs.push(daemon.stderr);
        ({ daemon, url } = await start(a))
        events.restarts++
      }
      await new Promise(resolve => setTimeout(resolve, 1_000))
    }
    await admin(url, serviceDir, 'DELETE', '/local/faults').catch(() => undefined)
    // The last change must be indexed and published without help.
    const finalAt = Date.now()
    await writeFile(join(a.folder, 'final.txt'), `final ${finalAt}`)
    // On a busy machine a publish for an earlier change can land before the file is indexed: wait
    // for its row, then for a publish that holds it. "Holds it" is the daemon's own word: the pointer
    // in sync means the last publish carries the index as it is now (its change marker) and the
    // pointer holds that publish. A publish time after the moment this test saw the row is not it:
    // a scheduled publish (every 2 s) can begin between the row's write and this test's look.
    await until(async () => (await rows(a)).some(r => r.path === 'final.txt' && !r.deleted) || undefined, 20_000, 'the last change indexed')
    const doc = await until(async () => {
      const s = await status(a)
      return s.publish?.last != null && s.publish.pendingAt === null && s.publish.running === false && s.publish.pointer?.inSync === true ? s : undefined
    }, 20_000, 'a publish that holds the last change, on the pointer').catch(async () => await status(a))
    logs.push(daemon.stderr)
    const published = logs.join('\n').split('\n').filter(l => l.includes('"msg":"published"')).length
    report('time', { seed: rng.seed, ttlSeconds: TTL_SECONDS, runSeconds: Math.round((Date.now() - started) / 1000), tokenLifetimesPassed: Math.floor((Date.now() - started) / 1000 / TTL_SECONDS), published, events, publish: { blocked: doc.publish?.blocked, lastError: doc.publish?.lastError, failures: doc.publish?.failures, runs: doc.publish?.runs } })
    // The short lifetime really applied (else this run proved nothing about renewal).
    const expiresAt = Date.parse(doc.auth?.sessionToken?.expiresAt as string)
    expect.soft(expiresAt - Date.now(), `the session token expires at ${String(doc.auth?.sessionToken?.expiresAt)}: the ${TTL_SECONDS} s lifetime was not applied`).toBeLessThanOrEqual(TTL_SECONDS * 1000 + 1_000)
    expect(events.faultsRefused, 'outages could not be injected (admin routes of the embedded service)').toBe(0)
    expect(doc.publish?.blocked ?? null, JSON.stringify(doc.publish)).toBeNull()
    expect(doc.publish?.pointer?.inSync, `no publish of the last change on the pointer: ${JSON.stringify(doc.publish)}`).toBe(true)
    await expectIndexEqualsFolder(a, 'after a month of weather')
    expect((await daemon.stop()).code).toBe(0)
    const b = await device(root, 'b')
    await shareKey(a, b)
    await ok(['restore', '--config', b.config])
    expect((await rows(b, true)).filter(r => !r.deleted).map(r => r.path)).toContain('final.txt')
  }, limit(90_000, 600_000))
})
