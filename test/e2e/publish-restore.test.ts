import { describe, it, expect } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

const STEPS = ['snapshot', 'upload', 'deal', 'pointer', 'name', 'done'] as const

async function deviceConfig (root: string, name: string, extra = ''): Promise<string> {
  await mkdir(join(root, name, 'notes'), { recursive: true })
  const path = join(root, `${name}.toml`)
  await writeFile(path, `state_dir = "${name}/state"\n[[folders]]\nname = "notes"\npath = "${name}/notes"\n[service]\ndir = "${join(root, 'service')}"\n[status]\nlisten = "127.0.0.1:0"\n[snapshot]\nipns_key = "auto"\n${extra}`)
  return path
}

const lsJson = async (config: string): Promise<Array<{ device: string, path: string, cid: string }>> =>
  JSON.parse((await runCli(['ls', '--all-devices', '--json', '--config', config])).stdout) as Array<{ device: string, path: string, cid: string }>

describe('publish and restore, as processes', () => {
  it.each(STEPS)('a publish killed with SIGKILL at the %s step resumes, and the pointer ends at a restorable snapshot', async (step) => {
    const root = await useTempDir()
    const a = await deviceConfig(root, 'a')
    await writeFile(join(root, 'a', 'notes', 'one.md'), 'one')
    await writeFile(join(root, 'a', 'notes', 'two.md'), 'two')
    const killed = await runCli(['snapshot', '--config', a], { env: { ...process.env, CIDSYNC_FAILPOINT: `publish:${step}` } })
    expect(killed.signal).toBe('SIGKILL')
    const resumed = await runCli(['snapshot', '--config', a, '--json'])
    expect(resumed.code).toBe(0)
    const { cid } = JSON.parse(resumed.stdout) as { cid: string }
    expect(JSON.parse((await runCli(['pointer', 'get', '--json', '--config', a])).stdout)).toMatchObject({ snapshotCid: cid, memories: 2 })

    const b = await deviceConfig(root, 'b')
    await runCli(['key', 'import', '--config', b], { input: (await runCli(['key', 'export', '--config', a])).stdout })
    expect((await runCli(['restore', '--config', b])).code).toBe(0)
    expect(await lsJson(b)).toEqual(await lsJson(a))
    if (step !== 'snapshot') return
    // The restore shows in the next daemon's metrics.
    const daemon = new DaemonProcess(['--config', b])
    await daemon.logged('service ready')
    const metrics = await until(async () => {
      const text = (await runCli(['status', '--json', '--config', b])).stdout
      const doc = JSON.parse(text) as { publish: { restores: { count: number } } | null }
      return doc.publish !== null ? doc : undefined
    }, 10_000, 'the publish status')
    expect(metrics.publish?.restores.count).toBe(1)
    expect((await daemon.stop()).code).toBe(0)
  })

  it('two daemons, two state dirs, one service: each sees the other\'s files after a round', async () => {
    const root = await useTempDir()
    const a = await deviceConfig(root, 'a', 'quiet_seconds = 0\nmin_interval_seconds = 0\n')
    const b = await deviceConfig(root, 'b', 'quiet_seconds = 0\nmin_interval_seconds = 0\n')
    await runCli(['key', 'import', '--config', b], { input: (await runCli(['key', 'export', '--config', a])).stdout })
    await writeFile(join(root, 'a', 'notes', 'from-a.md'), 'a')
    await writeFile(join(root, 'b', 'notes', 'from-b.md'), 'b')
    const daemonA = new DaemonProcess(['--config', a])
    const daemonB = new DaemonProcess(['--config', b])
    await daemonA.logged('service ready')
    await daemonB.logged('service ready')
    for (const config of [a, b, a]) expect((await runCli(['snapshot', '--config', config])).code).toBe(0)
    for (const config of [a, b]) {
      await until(async () => {
        const paths = (await lsJson(config)).map(e => e.path).sort()
        return JSON.stringify(paths) === JSON.stringify(['from-a.md', 'from-b.md']) ? true : undefined
      }, 15_000, `both files in ${config}'s index`)
    }
    expect((await daemonA.stop()).code).toBe(0)
    expect((await daemonB.stop()).code).toBe(0)
  })
})
