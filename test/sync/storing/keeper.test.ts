import { afterEach, describe, expect, it } from 'vitest'
import pino from 'pino'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../../src/config/index.js'
import { createDaemon, type StatusDocument } from '../../../src/daemon/index.js'
import { startLocalService, type LocalService } from '../../../src/local-service/index.js'
import { createServiceClients } from '../../../src/remote/index.js'
import { newWalletKey } from '../../../src/crypto/index.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { httpGet } from '../../helpers/http.js'
import { until, within } from '../../helpers/wait.js'
import { writeTestConfig } from '../../helpers/config-file.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => { for (const c of cleanups.splice(0).reverse()) await c() })

async function statusOf (port: number): Promise<StatusDocument> {
  return JSON.parse((await httpGet({ port }, '/status')).body) as StatusDocument
}

/**
 * A local service over loopback with an account on it, and a config in `dir` of one storing
 * folder, `notes`, against it. Its keys are in the environment until the test ends.
 */
async function storingAgainstService (dir: string, options: { readonly log_level: 'silent' | 'info', readonly deal: boolean }): Promise<{ service: LocalService, env: Record<string, string> }> {
  const service = await startLocalService({ dir: join(dir, 'remote-service') })
  cleanups.push(async () => { await service.stop() })
  const signup = createServiceClients({ dealUrl: service.url, apiUrl: service.url, pointerUrl: service.url, uploadUrl: service.url, gateways: [] }, { apiKey: () => undefined, sessionToken: () => undefined })
  const apiKey = (await signup.deals.login(newWalletKey())).apiKey
  await signup.close()
  await mkdir(join(dir, 'notes'), { recursive: true })
  const url = service.url
  await writeTestConfig(dir, {
    log_level: options.log_level,
    folders: [{ name: 'notes', path: 'notes', store: true }],
    snapshot: { quiet_seconds: 3600, min_interval_seconds: 3600, deal: options.deal },
    service: { mode: 'remote', deal_url: url, api_url: url, pointer_url: url, upload_url: url, gateways: [url] }
  })
  const env = { CIDSYNC_API_KEY: apiKey, CIDSYNC_SESSION_TOKEN: service.issueToken('someone') }
  const saved = { key: process.env.CIDSYNC_API_KEY, token: process.env.CIDSYNC_SESSION_TOKEN }
  Object.assign(process.env, env)
  cleanups.push(async () => {
    for (const [name, value] of [['CIDSYNC_API_KEY', saved.key], ['CIDSYNC_SESSION_TOKEN', saved.token]] as const) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  })
  return { service, env }
}

describe('the content keeper, asked by a person to publish', () => {
  it('tries a failed file again at once (`cidsync snapshot` once the service is fixed), not at the end of its back-off', async () => {
    const dir = await useTempDir()
    const { service, env } = await storingAgainstService(dir, { log_level: 'silent', deal: false })
    const daemon = createDaemon(loadConfig({ configPath: join(dir, 'config.toml'), env }))
    cleanups.push(async () => { await daemon.stop() })
    // The service refuses uploads (not retried by the client): the file's pass fails, and it waits out its back-off.
    service.faults.set('upload', { errorRate: 1, status: 400 })
    await writeFile(join(dir, 'notes', 'todo.md'), 'buy milk')
    await within(daemon.start(), 10_000, 'the daemon to start')
    await within(daemon.current(), 10_000, 'the startup scan')
    const port = Number(daemon.statusAddress?.split(':').pop())
    const token = (await readFile(join(dir, 'state', 'status.token'), 'utf8')).trim()
    const failed = await until(async () => {
      const failures = (await statusOf(port)).content?.failures ?? []
      return failures.length === 1 ? failures[0] : undefined
    }, 30_000, 'the upload to fail')
    expect(failed?.path).toBe('todo.md')
    expect(Date.parse(failed?.retryAt ?? '')).toBeGreaterThan(Date.now() + 5_000)

    // Fixed: the person publishes now, and expects the file stored by this publish, not in half a minute or an hour.
    service.faults.clear()
    const answer = await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    expect(answer.status, answer.body).toBe(200)
    const published = JSON.parse(answer.body) as { content?: { storedFiles: number, notStored: unknown[] } }
    expect(published.content).toMatchObject({ storedFiles: 1, notStored: [] })
    expect((await statusOf(port)).content?.failures).toEqual([])
  }, 90_000)
})

describe('the content keeper, stopped with the daemon', () => {
  it('says its pass stopped, with no error, when the daemon stops while a stored object\'s deal request is in flight', async () => {
    const dir = await useTempDir()
    const { service, env } = await storingAgainstService(dir, { log_level: 'info', deal: true })
    const lines: Array<{ level: number, msg: string }> = []
    const logger = pino({ level: 'info' }, { write: (line: string) => { lines.push(JSON.parse(line) as { level: number, msg: string }) } })
    const daemon = createDaemon(loadConfig({ configPath: join(dir, 'config.toml'), env }), logger)
    let stopped = false
    cleanups.push(async () => { if (!stopped) await daemon.stop() })
    // The stored object's deal request is held by the service: the storing pass is in flight when the daemon stops.
    service.faults.set('add_cid', { latencyMs: 60_000, times: 1 })
    await writeFile(join(dir, 'notes', 'todo.md'), 'buy milk')
    await within(daemon.start(), 10_000, 'the daemon to start')
    await until(async () => service.faults.has('add_cid') ? undefined : true, 30_000, 'the deal request to reach the service')
    await within(daemon.stop(), 30_000, 'the daemon to stop')
    stopped = true
    expect(lines.filter(l => l.level >= 50).map(l => l.msg)).toEqual([])
    expect(lines.map(l => l.msg)).toContain('storing content stopped with the daemon; its next start goes on')
  }, 90_000)
})
