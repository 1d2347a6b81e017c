import { describe, it, expect } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within } from '../helpers/wait.js'
import { writeTestConfig } from '../helpers/config-file.js'

describe('a failure nothing handled', () => {
  it.each([
    ['unhandled-rejection', 'unhandledRejection'],
    ['uncaught-exception', 'uncaughtException']
  ])('(%s) is logged at fatal with where it came from, the daemon stops cleanly and exits 1', async (point, origin) => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'a')
    const config = await writeTestConfig(dir, { watch: { settle_ms: undefined } }, 'c.toml')
    const daemon = new DaemonProcess(['--config', config], { env: { ...process.env, CIDSYNC_FAILPOINT: `daemon:${point}` } })
    const exited = await within(new Promise<number | null>(resolve => daemon.child.on('close', code => resolve(code))), 15_000, 'the daemon to exit')
    expect(exited, daemon.stderr).toBe(1)
    const fatal = await daemon.logged('a failure nothing handled: stopping (a bug: please report it with this line)', 0).catch(() => undefined)
    expect(fatal, daemon.stderr).toMatchObject({ level: 60, origin, err: { message: `failpoint daemon:${point}`, stack: expect.stringContaining('Error: failpoint') } })
    // The clean stop ran after it: the batch committed, the lock released.
    expect(daemon.stderr.indexOf('"msg":"daemon stopped"')).toBeGreaterThan(daemon.stderr.indexOf('"level":60'))
  })
})
