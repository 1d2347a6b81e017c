import { describe, expect, it } from 'vitest'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { request } from 'undici'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { writeTestConfig } from '../helpers/config-file.js'

interface Doc { service: { endpoint: string | null, error: string | null } }

async function statusOf (config: string): Promise<Doc | undefined> {
  const result = await runCli(['status', '--json', '--config', config])
  return result.code === 0 ? JSON.parse(result.stdout) as Doc : undefined
}

describe('a daemon that is not ready yet', () => {
  it('answers POST /snapshot with 503 and Retry-After, and cidsync snapshot waits for it, saying what for', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'a')
    // A file where the service directory should be: the embedded service cannot start until it is gone.
    await writeFile(join(dir, 'svc'), 'in the way')
    const config = await writeTestConfig(dir, { service: { dir: 'svc' }, watch: { settle_ms: undefined } }, 'c.toml')
    const daemon = new DaemonProcess(['--config', config])
    await daemon.logged('the service could not be reached')
    const doc = await until(async () => { const d = await statusOf(config); return d?.service.error != null ? d : undefined }, 15_000, 'the service error in status')
    expect(doc.service.error).toContain('trying again at')

    const info = JSON.parse(await (await import('node:fs/promises')).readFile(join(dir, 'state', 'daemon.json'), 'utf8')) as { status: string }
    const token = (await (await import('node:fs/promises')).readFile(join(dir, 'state', 'status.token'), 'utf8')).trim()
    const answer = await request(`http://${info.status}/snapshot`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    expect(answer.statusCode).toBe(503)
    expect(answer.headers['retry-after']).toBe('5')
    expect(((await answer.body.json()) as { code: string }).code).toBe('ERR_NOT_READY')

    const snapshot = runCli(['snapshot', '--json', '--config', config], { timeoutMs: 60_000 })
    await until(async () => (await statusOf(config))?.service.error != null || undefined, 5_000, 'still in error')
    await rm(join(dir, 'svc'))
    const published = await snapshot
    expect(published.stderr).toContain('cidsync: waiting for the daemon: not ready: publishing waits for the service')
    expect(published.code).toBe(0)
    expect(JSON.parse(published.stdout)).toMatchObject({ entries: 1 })
    const ready = await until(async () => { const d = await statusOf(config); return d?.service.endpoint != null ? d : undefined }, 15_000, 'the service reached')
    expect(ready.service.error).toBeNull()
    expect((await daemon.stop()).code).toBe(0)
  })
})
