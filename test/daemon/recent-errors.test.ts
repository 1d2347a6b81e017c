import { describe, it, expect, afterEach } from 'vitest'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/index.js'
import { createDaemon, RecentErrors, type Daemon, type StatusDocument } from '../../src/daemon/index.js'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { formatStatus } from '../../src/cli/commands/status.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { httpGet } from '../helpers/http.js'
import { until, within } from '../helpers/wait.js'
import { writeTestConfig } from '../helpers/config-file.js'

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => { for (const c of cleanups.splice(0).reverse()) await c() })

async function statusOf (port: number): Promise<StatusDocument> {
  return JSON.parse((await httpGet({ port }, '/status')).body) as StatusDocument
}

async function post (port: number, path: string, token: string): Promise<number> {
  return (await httpGet({ port }, path, { method: 'POST', headers: { authorization: `Bearer ${token}` } })).status
}

/** A daemon as `cidsync daemon` makes it (its errors reach status through the logger), against a local service whose faults the test sets. */
async function startAgainst (dir: string, service: LocalService): Promise<{ daemon: Daemon, port: number, token: string }> {
  const signup = createServiceClients({ dealUrl: service.url, apiUrl: service.url, pointerUrl: service.url, uploadUrl: service.url, gateways: [] }, { apiKey: () => undefined, sessionToken: () => undefined })
  const apiKey = (await signup.deals.login(newWalletKey())).apiKey
  await signup.close()
  await mkdir(join(dir, 'notes'), { recursive: true })
  const url = service.url
  await writeTestConfig(dir, {
    log_level: 'error',
    folders: [{ name: 'notes', path: 'notes' }, { name: 'usb', path: 'usb' }],
    snapshot: { quiet_seconds: 3600, min_interval_seconds: 3600 },
    service: { mode: 'remote', deal_url: url, api_url: url, pointer_url: url, upload_url: url, gateways: [url] }
  })
  const env = { CIDSYNC_API_KEY: apiKey, CIDSYNC_SESSION_TOKEN: service.issueToken('someone') }
  const daemon = createDaemon(loadConfig({ configPath: join(dir, 'config.toml'), env }))
  const saved = { key: process.env.CIDSYNC_API_KEY, token: process.env.CIDSYNC_SESSION_TOKEN }
  Object.assign(process.env, env)
  cleanups.push(async () => {
    await daemon.stop()
    for (const [name, value] of [['CIDSYNC_API_KEY', saved.key], ['CIDSYNC_SESSION_TOKEN', saved.token]] as const) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  })
  await within(daemon.start(), 10_000, 'the daemon to start')
  await within(daemon.current(), 10_000, 'the startup scan')
  const port = Number(daemon.statusAddress?.split(':').pop())
  return { daemon, port, token: (await readFile(join(dir, 'state', 'status.token'), 'utf8')).trim() }
}

describe('errors in status', () => {
  it('leave the current list once what they were about works again, kept apart as resolved', async () => {
    const dir = await useTempDir()
    const service = await startLocalService({ dir: join(dir, 'remote-service') })
    cleanups.push(async () => { await service.stop() })
    const { port, token } = await startAgainst(dir, service)
    await writeFile(join(dir, 'notes', 'a.md'), 'alpha')
    await until(async () => (await statusOf(port)).publish !== null ? true : undefined, 20_000, 'the service to be reached')

    // A missing folder and a publish the service fails: both current errors.
    service.faults.set('pointers_put', { errorRate: 1, status: 500 })
    expect(await post(port, '/snapshot', token)).toBe(502)
    const failing = await until(async () => {
      const s = await statusOf(port)
      return s.lastErrors.some(e => e.message === 'publish failed') && s.lastErrors.some(e => e.message.includes('"usb"')) ? s : undefined
    }, 20_000, 'both errors listed')
    expect(failing.resolvedErrors).toEqual([])
    // Failing again: listed once, counted, not once per try.
    expect(await post(port, '/snapshot', token)).toBe(502)
    const twice = await until(async () => {
      const s = await statusOf(port)
      // At least two: the daemon may also retry the failed publish on its own.
      return (s.lastErrors.find(e => e.message === 'publish failed')?.count ?? 0) >= 2 ? s : undefined
    }, 20_000, 'the second failure counted')
    expect(twice.lastErrors.filter(e => e.message === 'publish failed')).toHaveLength(1)
    const first = failing.lastErrors.find(e => e.message === 'publish failed')?.at as string
    const repeated = formatStatus(twice)
    expect(repeated).toMatch(new RegExp(`\\(×\\d+ since ${first.replace(/[.]/g, '\\.')}\\)`))
    expect(repeated.match(/ {2}\S+ {2}publish failed/g)).toHaveLength(1)

    // The service mends and the next publish goes through: the publish error is resolved, the folder's is not.
    service.faults.clear()
    expect(await post(port, '/snapshot', token)).toBe(200)
    const mended = await statusOf(port)
    expect(mended.lastErrors.map(e => e.message)).not.toContain('publish failed')
    expect(mended.lastErrors.some(e => e.message.includes('"usb"'))).toBe(true)
    expect(mended.resolvedErrors).toEqual([expect.objectContaining({ message: 'publish failed', resolvedAt: expect.any(String) })])
    const summary = formatStatus(mended)
    expect(summary.slice(summary.indexOf('recent errors:'), summary.indexOf('resolved since'))).not.toContain('publish failed')
    expect(summary).toMatch(/resolved since \(not errors any more\):\n {2}\S+ {2}publish failed .* · resolved \S+/)

    // The folder is made: it is picked up without a restart, and its error leaves the list too.
    await mkdir(join(dir, 'usb'))
    const allWell = await until(async () => {
      const s = await statusOf(port)
      return s.lastErrors.length === 0 ? s : undefined
    }, 30_000, 'the folder\'s error to be resolved')
    expect(allWell.resolvedErrors.map(e => e.message)).toEqual(['publish failed', expect.stringContaining('"usb"')])
    expect(formatStatus(allWell)).not.toContain('recent errors:')
  }, 90_000)

  it('folds the same error again into one, counted, with its first and last time, so it does not push the others out', () => {
    const errors = new RecentErrors(3, 2)
    errors.record({ at: new Date(0).toISOString(), message: 'other', code: null, detail: null }, undefined)
    for (let i = 1; i <= 50; i++) errors.record({ at: new Date(i * 1000).toISOString(), message: 'publish failed', code: 'ERR_REMOTE_STATUS', detail: `try ${i}` }, 'publish')
    errors.record({ at: new Date(60_000).toISOString(), message: 'publish failed', code: 'ERR_REMOTE_NETWORK', detail: null }, 'publish')
    expect(errors.list()).toEqual([
      { at: new Date(0).toISOString(), message: 'other', code: null, detail: null, count: 1, firstAt: new Date(0).toISOString() },
      { at: new Date(50_000).toISOString(), message: 'publish failed', code: 'ERR_REMOTE_STATUS', detail: 'try 50', count: 50, firstAt: new Date(1000).toISOString() },
      { at: new Date(60_000).toISOString(), message: 'publish failed', code: 'ERR_REMOTE_NETWORK', detail: null, count: 1, firstAt: new Date(60_000).toISOString() }
    ])
    errors.resolve('publish')
    expect(errors.resolvedList().map(e => [e.code, e.count])).toEqual([['ERR_REMOTE_STATUS', 50], ['ERR_REMOTE_NETWORK', 1]])
  })

  it('keeps both lists bounded, the oldest going first', () => {
    const errors = new RecentErrors(3, 2)
    for (let i = 0; i < 5; i++) errors.record({ at: new Date(i).toISOString(), message: `e${i}`, code: null, detail: null }, i % 2 === 0 ? 'publish' : undefined)
    expect(errors.list().map(e => e.message)).toEqual(['e2', 'e3', 'e4'])
    errors.resolve('publish')
    expect(errors.list().map(e => e.message)).toEqual(['e3'])
    expect(errors.resolvedList().map(e => e.message)).toEqual(['e2', 'e4'])
  })
})
