import { describe, it, expect } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { writeTestConfig } from '../helpers/config-file.js'

// A user namespace has inotify limits of its own, so a test can run out of watches without
// touching the machine's limit.
const LIMIT = 3
const canLimitWatches = spawnSync('unshare', ['-Ur', 'sh', '-c', `echo ${LIMIT} > /proc/sys/user/max_inotify_watches`]).status === 0
const limited = (command: string[]): string[] => ['unshare', '-Ur', 'sh', '-c', `echo ${LIMIT} > /proc/sys/user/max_inotify_watches && exec "$@"`, 'sh', ...command]

describe('running out of inotify watches', () => {
  it.runIf(canLimitWatches)('is one clear error naming the sysctl, the folder in error, indexing done', async () => {
    const dir = await useTempDir()
    for (const sub of ['a', 'b', 'c', 'd', 'e', 'f']) {
      await mkdir(join(dir, 'notes', sub), { recursive: true })
      await writeFile(join(dir, 'notes', sub, 'x.md'), sub)
    }
    const config = await writeTestConfig(dir, { watch: { settle_ms: undefined } })
    const daemon = new DaemonProcess(['--config', config], { wrap: limited })
    expect(await daemon.logged('index current')).toMatchObject({ files: 6 })
    await daemon.logged('watching')
    const errors = daemon.stderr.split('\n').filter(l => l.includes('out of inotify watches'))
    expect(errors).toHaveLength(1)
    expect(errors[0]).toContain('sudo sysctl fs.inotify.max_user_watches=524288')
    const status = await until(async () => {
      const doc = JSON.parse((await runCli(['status', '--config', config, '--json'])).stdout) as { watcher: { state: string }, folders: Array<{ state: string, files: number, error: string | null }> }
      return doc.watcher.state === 'degraded' ? doc : undefined
    }, 10_000, 'the status to say degraded')
    expect(status.folders[0]).toMatchObject({ state: 'error', files: 6, error: expect.stringContaining('out of inotify watches') })
    expect((await daemon.stop()).code).toBe(0)
  })
})
