import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { contentDevice, ok, shareKey, tree, writeSomeFiles } from '../cli/content-devices.js'

interface ContentStatus { folders: Array<{ folder: string, protected: { files: number }, pending: { files: number } }>, failures: unknown[], lastError: { message: string } | null }

describe.skipIf(EXTERNAL)('the daemon storing content through an upload outage (processes)', () => {
  it('keeps failing uploads visible while the service refuses them, backs off, and stores everything once it is back', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    await writeSomeFiles(a.folder, 'docs', { largeBytes: 3 * 1024 * 1024 + 1, small: 10 })
    // Longer than any one request's retries: every upload refused until the test lifts it.
    service.local.faults.set('upload', { errorRate: 1, status: 503 })
    const daemon = new DaemonProcess(['--config', a.config], { env: a.env })
    // Null until the daemon answers (status then reads the state dir, which holds no content state).
    const content = async (): Promise<ContentStatus | null> => {
      const s = await a.run(['status', '--json'])
      return (JSON.parse(s.stdout) as { content?: ContentStatus | null }).content ?? null
    }
    const refused = await until(async () => {
      const c = await content().catch(() => undefined)
      return c != null && (c.failures.length > 0 || c.lastError !== null) ? c : undefined
    }, 60_000, 'the refused uploads shown in status')
    expect(refused.folders[0]?.protected.files).toBe(0)
    expect(refused.folders[0]?.pending.files).toBe(11)

    service.local.faults.clear()
    await until(async () => {
      const c = await content().catch(() => undefined)
      return c?.folders[0]?.protected.files === 11 && c.folders[0].pending.files === 0 && c.failures.length === 0 ? c : undefined
    }, 120_000, 'every file stored once the service is back', 500)
    await daemon.stop()

    await ok(a, ['snapshot'])
    await ok(b, ['restore'])
    const to = join(root, 'back')
    await ok(b, ['restore', '--files', '--to', to])
    expect(await tree(join(to, 'notes'))).toEqual(await tree(a.folder))
  }, 900_000)
})
