import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

async function config (dir: string): Promise<string> {
  await mkdir(join(dir, 'notes'))
  await writeFile(join(dir, 'notes', 'one.md'), 'one')
  const path = join(dir, 'c.toml')
  await writeFile(path, 'state_dir = "state"\n[[folders]]\nname = "notes"\npath = "notes"\n[status]\nlisten = "127.0.0.1:0"\n')
  return path
}

interface Reconciled { remoteFiles: number, gone: number, names: number, dealsMade: number, republished: boolean }

describe('cidsync reconcile, and the counts after a publish', () => {
  it('with no daemon: mirrors the account on its own and says what it holds', async () => {
    const dir = await useTempDir()
    const path = await config(dir)
    // Nothing to mirror into yet: said (exit 3), and no empty index made that a restore would have to --force over.
    const fresh = await runCli(['reconcile', '--config', path])
    expect(fresh.code).toBe(3)
    expect(fresh.stderr).toContain('[ERR_INDEX_MISSING]')
    expect(existsSync(join(dir, 'state', 'index.sqlite'))).toBe(false)
    expect((await runCli(['snapshot', '--config', path])).code).toBe(0)
    const json = await runCli(['reconcile', '--json', '--config', path])
    expect(json.code, json.stderr).toBe(0)
    expect((JSON.parse(json.stdout) as Reconciled).remoteFiles).toBeGreaterThanOrEqual(2)
    const text = await runCli(['reconcile', '--config', path])
    expect(text.code).toBe(0)
    // A deal asked for by the publish may be made between the two looks (a slow machine): counted, whichever it is.
    expect(text.stdout).toMatch(/^the account holds \d+ uploads, 0 IPNS names; \d+ deals? made since the last look\n$/)
  })

  it('with a daemon: a publish is counted at once, and reconcile goes through the daemon', async () => {
    const dir = await useTempDir()
    const path = await config(dir)
    const daemon = new DaemonProcess(['--config', path])
    await daemon.logged('index current')
    expect((await runCli(['snapshot', '--config', path])).code).toBe(0)
    // No reconcile asked for: the publish's own uploads show up in the daemon's counts.
    const counted = await until(async () => {
      const doc = JSON.parse((await runCli(['status', '--json', '--config', path])).stdout) as { reconcile: { remoteFiles: number } | null }
      return (doc.reconcile?.remoteFiles ?? 0) > 0 ? doc : undefined
    }, 30_000, 'the publish counted in status')
    expect(counted.reconcile?.remoteFiles).toBeGreaterThanOrEqual(2)
    const through = await runCli(['reconcile', '--json', '--config', path])
    expect(through.code, through.stderr).toBe(0)
    expect((JSON.parse(through.stdout) as Reconciled).remoteFiles).toBe(counted.reconcile?.remoteFiles)
    await daemon.stop()
  }, 90_000)
})
