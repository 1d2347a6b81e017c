import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { EXTERNAL } from '../helpers/service.js'
import { device, ok, proofDir, shareKey, status } from '../proof/harness.js'
import { mirroredDevice, startHome } from '../cli/mirror-helpers.js'

const ENV = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }

describe.skipIf(EXTERNAL)('import --car onto a primary with a mirror', () => {
  it('the imported history and its content reach the mirror, which then restores alone', async () => {
    const root = await proofDir()
    // The old home: a device on its embedded service, one storing folder.
    const old = await device(root, 'old', { extra: '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n' })
    await mkdir(join(old.root, 'kept'), { recursive: true })
    await writeFile(join(old.root, 'kept', 'small.txt'), 'small\n')
    await writeFile(join(old.root, 'kept', 'large.bin'), randomBytes(700_000))
    await ok(['snapshot', '--config', old.config], { timeoutMs: 120_000 })
    const car = join(root, 'history.car')
    const exported = JSON.parse((await ok(['export', '--car', car, '--content', '--json', '--config', old.config], { timeoutMs: 120_000 })).stdout.trim().split('\n').at(-1) as string) as { root: string, publish: string }

    // The new home: a self-hosted primary, a mirror beside it; the history imported there.
    const primary = await startHome(join(root, 'primary'))
    const mirror = await startHome(join(root, 'mirror'))
    const d = await mirroredDevice(root, 'new', primary, mirror)
    await shareKey(old, d)
    await ok(['import', '--car', car, '--config', d.config], { timeoutMs: 120_000 })

    const daemon = new DaemonProcess(['--config', d.config], { env: ENV })
    try {
      await daemon.logged('service ready', 60_000)
      await until(async () => {
        const m = (await status(d)).mirrors[0] as { objectsBehind: number, lastPublish: { cid: string } | null }
        return m.objectsBehind === 0 && m.lastPublish?.cid === exported.publish ? true : undefined
      }, 120_000, 'the mirror holding the imported publish', 200)
    } finally {
      await daemon.stop()
    }
    const drill = await runCli(['verify', '--mirror', 'nas', '--content', '--config', d.config], { timeoutMs: 120_000 })
    expect(drill.code, drill.stdout + drill.stderr).toBe(0)
    expect(drill.stdout).toContain(`mirror nas: restorable: ${exported.publish}`)
  }, 600_000)
})
