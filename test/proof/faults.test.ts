import { describe, it, expect } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { admin, limit, ok, post, proofDir, remoteDevice, report, rows, seeded, serviceProcess, size, writeFiles } from './harness.js'

/**
 * Faults: a daemon in remote mode against the local service run as its own process, which fails
 * 20% of requests in turn with 5xx, 429, connection resets before and after the answer, and slow
 * answers. Every publish and reconcile must succeed eventually, in a bounded number of requests.
 */
const FAULTS: Record<string, Record<string, unknown>> = {
  '5xx': { '*': { errorRate: 0.2, status: 500 }, upload: { errorRate: 0.2, status: 503 }, pointers_put: { errorRate: 0.2, status: 502 }, files_uploaded: { errorRate: 0.2, status: 504 } },
  429: { '*': { errorRate: 0.2, status: 429, retryAfterSeconds: 1 } },
  'reset before answer': { '*': { resetRate: 0.2 } },
  // Cut after the service did the work (the answer lost): needs the local service to offer it.
  'reset after answer': { '*': { resetAfterRate: 0.2 } },
  // Slow answers (the local service delays the answer; it cannot yet trickle a body).
  slow: { '*': { latencyMs: 150 }, upload: { latencyMs: 600 }, gateway: { latencyMs: 600 } }
}
/** What one operation may cost: each request of a publish tried at most 5 times, and an operation tried again at most twice. */
const MAX_REQUESTS_PER_OPERATION = 60
const MAX_TRIES = 3

describe('proof: faults', () => {
  it('every publish and reconcile succeeds eventually under 20% 5xx, 429, resets and slow answers, in bounded requests', async () => {
    const rng = seeded('faults')
    const root = await proofDir()
    const service = await serviceProcess(join(root, 'service'), ['--page-size', '20', '--deal-delay-ms', '200'])
    const a = await remoteDevice(root, 'a', service, {
      extra: '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\nmin_interval_seconds = 0\nipns_key = "auto"\n[reconcile]\nschedule = "0 0 1 1 *"\n'
    })
    await writeFiles(a.folder, 40, rng)
    const daemon = new DaemonProcess(['--config', a.config])
    await daemon.logged('service ready', 30_000)
    expect((await post(a, '/snapshot')).status).toBe(200)

    const operations = size(30, 1_000)
    const kinds = Object.keys(FAULTS)
    const unsupported = new Set<string>()
    const perOp: number[] = []
    const started = Date.now()
    const tries: Record<string, number> = {}
    let lastCid = ''
    for (let i = 0; i < operations; i++) {
      const kind = kinds[i % kinds.length] as string
      const since = Date.now()
      const set = await admin(service.url, service.dir, 'PUT', '/local/faults', FAULTS[kind])
      if (set.status === 400) unsupported.add(kind)
      else expect(set.status, JSON.stringify(set.body)).toBe(200)
      const isPublish = i % 2 === 0
      if (isPublish) {
        // A change the daemon has indexed, so that every publish operation uploads a snapshot.
        const path = `op-${i % 7}.txt`
        const length = 10 + i + rng.int(5)
        await writeFile(join(a.folder, path), 'x'.repeat(length))
        await until(async () => (await rows(a)).some(r => r.path === path && r.size === length) ? true : undefined, 10_000, `${path} indexed`)
      }
      let answer = { status: 0, body: '' }
      let attempt = 0
      while (attempt < MAX_TRIES) {
        attempt++
        answer = await post(a, isPublish ? '/snapshot' : '/reconcile').catch((err: Error) => ({ status: 0, body: err.message }))
        if (answer.status === 200) break
      }
      await clearFaults(service)
      const used = await requestsSince(service, since)
      perOp.push(used)
      tries[`${isPublish ? 'publish' : 'reconcile'} in ${attempt}`] = (tries[`${isPublish ? 'publish' : 'reconcile'} in ${attempt}`] ?? 0) + 1
      expect.soft(answer.status, `operation ${i} (${isPublish ? 'publish' : 'reconcile'} under ${kind}) failed ${MAX_TRIES} times: ${answer.body}`).toBe(200)
      expect.soft(used, `operation ${i} (${kind}) took ${used} requests`).toBeLessThanOrEqual(MAX_REQUESTS_PER_OPERATION)
      if (i % 50 === 49) console.log(`[proof] faults op ${i} ${isPublish ? 'publish' : 'reconcile'} under ${kind}: ${answer.status} in ${attempt} tries, ${used} requests, at ${Date.now() - started} ms`)
      if (isPublish && answer.status === 200) lastCid = (JSON.parse(answer.body) as { cid: string }).cid
    }
    // Without faults, the pointer names the last snapshot and it restores.
    const pointer = JSON.parse((await ok(['pointer', 'get', '--json', '--config', a.config])).stdout) as { snapshotCid: string }
    expect(pointer.snapshotCid).toBe(lastCid)
    expect((await daemon.stop()).code).toBe(0)
    const sorted = [...perOp].sort((x, y) => x - y)
    report('faults', { seed: rng.seed, operations, requestsPerOperation: { p50: sorted[Math.floor(sorted.length / 2)], max: sorted[sorted.length - 1] }, tries, unsupportedFaults: [...unsupported] })
    expect(unsupported, 'fault kinds the local service does not offer').toEqual(new Set())
  }, limit(90_000, 3_600_000))
})

/** Requests the service has answered since `at`, its own admin routes left out. */
async function requestsSince (service: { url: string, dir: string }, at: number): Promise<number> {
  const log = await admin(service.url, service.dir, 'GET', '/local/requests')
  expect(Array.isArray(log.body), `GET /local/requests: ${JSON.stringify(log)}`).toBe(true)
  return (log.body as Array<{ route: string, at: number | string }>).filter(r => !r.route.startsWith('local_') && new Date(r.at).getTime() >= at).length
}

/** Clearing faults must work through any fault rule; tried a bounded number of times. */
async function clearFaults (service: { url: string, dir: string }): Promise<void> {
  const answers: number[] = []
  for (let i = 0; i < 20; i++) {
    const answer = await admin(service.url, service.dir, 'DELETE', '/local/faults').catch(() => ({ status: 0 }))
    answers.push(answer.status)
    if (answer.status === 200) break
  }
  expect.soft(answers, 'DELETE /local/faults must not be blocked by a fault rule').toEqual([200])
}
