import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import type { StatusDocument } from '../../src/daemon/index.js'

async function configWith (dir: string, snapshot: string): Promise<string> {
  await mkdir(join(dir, 'notes'), { recursive: true })
  await writeFile(join(dir, 'notes', 'a.md'), 'a')
  const path = join(dir, 'c.toml')
  await writeFile(path, `state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n[snapshot]\nquiet_seconds = 3600\nmin_interval_seconds = 3600\n${snapshot}`)
  return path
}

async function reached (config: string): Promise<StatusDocument> {
  return await until(async () => {
    const result = await runCli(['status', '--json', '--config', config])
    const doc = result.code === 0 ? JSON.parse(result.stdout) as StatusDocument : undefined
    return doc?.publish != null ? doc : undefined
  }, 30_000, 'the service reached')
}

describe('cidsync status names the IPNS name in use', () => {
  it('the key made for ipns_key = "auto", as /ipns/ID, once a snapshot is published to it', async () => {
    const dir = await useTempDir()
    const config = await configWith(dir, 'ipns_key = "auto"\n')
    const daemon = new DaemonProcess(['--config', config])
    await daemon.logged('index current')
    const before = await reached(config)
    expect(before.publish?.ipns).toEqual({ key: 'auto', name: null, id: null, cid: null, at: null })
    expect((await runCli(['status', '--config', config])).stdout).toContain('ipns: a key is made at the next publish (ipns_key = "auto")\n')

    const published = JSON.parse((await runCli(['snapshot', '--json', '--config', config])).stdout) as { cid: string }
    const after = JSON.parse((await runCli(['status', '--json', '--config', config])).stdout) as StatusDocument
    const ipns = after.publish?.ipns
    expect(ipns).toMatchObject({ key: 'auto', name: expect.stringMatching(/^[0-9a-f]{32}$/), id: expect.stringMatching(/^k51/), cid: published.cid, at: expect.any(String) })
    expect((await runCli(['status', '--config', config])).stdout).toContain(`ipns: /ipns/${ipns?.id ?? ''} (key ${ipns?.name ?? ''}) -> ${published.cid} at ${ipns?.at ?? ''}\n`)
    await daemon.stop()
  }, 90_000)

  it('says there is none when ipns_key is not set', async () => {
    const dir = await useTempDir()
    const config = await configWith(dir, '')
    const daemon = new DaemonProcess(['--config', config])
    await daemon.logged('index current')
    expect((await reached(config)).publish?.ipns).toBeNull()
    expect((await runCli(['status', '--config', config])).stdout).toContain('ipns: none ([snapshot] ipns_key is not set)\n')
    await daemon.stop()
  }, 60_000)
})
