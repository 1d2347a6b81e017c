import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { StatusDocument } from '../../src/daemon/index.js'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { writeTestConfig } from '../helpers/config-file.js'

describe('a plain restart over a published, unchanged index', () => {
  it('is in sync at once: no publish pending, no "changes waiting"', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'one.md'), 'one')
    const path = await writeTestConfig(dir, { watch: { settle_ms: undefined } }, 'c.toml')
    const first = new DaemonProcess(['--config', path])
    await first.logged('service ready')
    expect((await runCli(['snapshot', '--config', path])).code).toBe(0)
    await first.stop()

    const second = new DaemonProcess(['--config', path])
    await second.logged('service ready')
    const doc = await until(async () => {
      const d = JSON.parse((await runCli(['status', '--json', '--config', path])).stdout) as StatusDocument
      return d.publish?.pointer.why === 'not looked at yet (reconciliation reads it)' ? undefined : d
    }, 20_000, 'the pointer looked at')
    expect(doc.publish?.pendingAt).toBeNull()
    expect(doc.publish?.pointer).toMatchObject({ inSync: true, why: null })
    await second.stop()
  }, 90_000)
})
