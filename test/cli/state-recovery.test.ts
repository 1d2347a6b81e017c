import { describe, it, expect } from 'vitest'
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

/** Both devices derive the same key from it: no key export and import to run. */
const env = { ...process.env, CIDSYNC_SNAPSHOT_PASSPHRASE: 'state recovery test' }
const cli = async (args: string[], more: Record<string, string> = {}): ReturnType<typeof runCli> => await runCli(args, { env: { ...env, ...more } })

interface Status {
  publish: unknown
  stateFiles: { recovered: Array<{ file: string, problem: string, action: string }>, leftoversRemoved: { files: number, bytes: number }, syncStateError: string | null }
}

async function deviceConfig (root: string, name: string): Promise<string> {
  await mkdir(join(root, name, 'notes'), { recursive: true })
  const path = join(root, `${name}.toml`)
  await writeFile(path, `state_dir = "${name}/state"\n[[folders]]\nname = "notes"\npath = "${name}/notes"\n[service]\ndir = "${join(root, 'service')}"\n[status]\nlisten = "127.0.0.1:0"\n[snapshot]\ndeal = false\n`)
  return path
}

const status = async (config: string): Promise<Status> => {
  const answer = await cli(['status', '--json', '--config', config])
  if (answer.code !== 0) throw new Error(`status failed: ${answer.stderr}`)
  return JSON.parse(answer.stdout) as Status
}

const lsPaths = async (config: string): Promise<string[]> => {
  const answer = await cli(['ls', '--all-devices', '--json', '--config', config])
  if (answer.code !== 0) throw new Error(`ls failed (${String(answer.code)}): ${answer.stderr}`)
  return (JSON.parse(answer.stdout) as Array<{ path: string }>).map(e => e.path).sort()
}

// Each runs the built CLI 6 to 9 times: a few seconds each on a quiet machine, more on a loaded one.
describe('state files at daemon start, as processes', { timeout: 60_000 }, () => {
  it('a restore killed between its renames leaves the old index; the next start removes its temp files', async () => {
    const root = await useTempDir()
    const a = await deviceConfig(root, 'a')
    await writeFile(join(root, 'a', 'notes', 'one.md'), 'one')
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    const b = await deviceConfig(root, 'b')
    expect((await cli(['restore', '--config', b])).code).toBe(0)

    const killed = await cli(['restore', '--force', '--config', b], { CIDSYNC_FAILPOINT: 'restore:between-renames' })
    expect(killed.signal).toBe('SIGKILL')
    const state = join(root, 'b', 'state')
    expect(await lsPaths(b)).toEqual(['one.md'])
    expect((await readdir(state)).filter(n => n.startsWith('index.sqlite.restoring'))).not.toEqual([])
    // What a killed merge or fetch leaves there, beside a file that is not ours.
    await writeFile(join(state, 'snapshots', `merge-7-${process.pid}-abcdef0123456789.seg`), 'left')
    await writeFile(join(state, 'snapshots', 'not-ours.txt'), 'kept')

    const daemon = new DaemonProcess(['--config', b], { env })
    await daemon.logged('service ready')
    const doc = await status(b)
    expect(doc.stateFiles.leftoversRemoved.files).toBeGreaterThanOrEqual(2)
    expect(await readdir(join(state, 'snapshots'))).toEqual(['not-ours.txt'])
    expect((await readdir(state)).filter(n => n.startsWith('index.sqlite.restoring'))).toEqual([])
    for (const name of ['index.sqlite', 'index.sqlite-wal', 'index.sqlite-shm', 'sync.sqlite']) expect((await stat(join(state, name))).mode & 0o777).toBe(0o600)
    expect((await daemon.stop()).code).toBe(0)
    expect((await cli(['restore', '--force', '--config', b])).code).toBe(0)
  })

  it('a damaged index is moved aside (kept), rebuilt from the folders, and status says so', async () => {
    const root = await useTempDir()
    const a = await deviceConfig(root, 'a')
    await writeFile(join(root, 'a', 'notes', 'one.md'), 'one')
    await writeFile(join(root, 'a', 'notes', 'two.md'), 'two')
    const state = join(root, 'a', 'state')
    await mkdir(state, { recursive: true })
    await writeFile(join(state, 'index.sqlite'), Buffer.alloc(16384, 'a bad disk block '))
    const daemon = new DaemonProcess(['--config', a], { env })
    const warned = await daemon.logged('recovered a state file')
    expect(String(warned.problem)).toContain('damaged')
    await daemon.logged('index current')
    expect(await lsPaths(a)).toEqual(['one.md', 'two.md'])
    const doc = await status(a)
    expect(doc.stateFiles.recovered).toEqual([expect.objectContaining({ file: join(state, 'index.sqlite'), problem: expect.stringContaining('damaged') as string, action: expect.stringContaining('rebuilt from the folders') as string })])
    expect((await cli(['status', '--config', a])).stdout).toContain('recovered at')
    expect((await readdir(state)).filter(n => /^index\.sqlite\.damaged-[\dT-]+Z$/.test(n)).length).toBe(1)
    expect((await daemon.stop()).code).toBe(0)
  })

  it('a damaged sync.sqlite does not take /status down: moved aside, started afresh, publishing works', async () => {
    const root = await useTempDir()
    const a = await deviceConfig(root, 'a')
    await writeFile(join(root, 'a', 'notes', 'one.md'), 'one')
    const state = join(root, 'a', 'state')
    await mkdir(state, { recursive: true })
    await writeFile(join(state, 'sync.sqlite'), Buffer.alloc(8192, 'garbage '))
    const daemon = new DaemonProcess(['--config', a], { env })
    await daemon.logged('service ready')
    const doc = await until(async () => { const d = await status(a); return d.publish !== null ? d : undefined }, 10_000, 'the publish status')
    expect(doc.stateFiles.recovered).toEqual([expect.objectContaining({ file: join(state, 'sync.sqlite'), problem: expect.stringContaining('damaged') as string })])
    expect(doc.stateFiles.syncStateError).toBeNull()
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    expect((await readdir(state)).filter(n => n.startsWith('sync.sqlite.damaged-')).length).toBe(1)
    expect((await daemon.stop()).code).toBe(0)
  })

  it.each(['daemon', 'standalone snapshot'])('an index lost after a publish is rebuilt, and the next publish (%s) merges the pointer back before it PUTs', async (how) => {
    const root = await useTempDir()
    const a = await deviceConfig(root, 'a')
    const b = await deviceConfig(root, 'b')
    await writeFile(join(root, 'a', 'notes', 'from-a.md'), 'a')
    await writeFile(join(root, 'b', 'notes', 'from-b.md'), 'b')
    expect((await cli(['snapshot', '--config', b])).code).toBe(0)
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    const state = join(root, 'a', 'state')
    for (const suffix of ['', '-wal', '-shm']) await rm(join(state, `index.sqlite${suffix}`), { force: true })
    if (how !== 'daemon') {
      const alone = await cli(['snapshot', '--config', a])
      expect(alone.code).toBe(0)
      expect(alone.stderr).toContain('it was missing, though this device had published')
      expect(await lsPaths(a)).toEqual(['from-a.md', 'from-b.md'])
      expect(JSON.parse((await cli(['pointer', 'get', '--json', '--config', a])).stdout)).toMatchObject({ memories: 2 })
      return
    }

    const daemon = new DaemonProcess(['--config', a], { env })
    await daemon.logged('service ready')
    expect((await cli(['snapshot', '--config', a])).code).toBe(0)
    expect(await lsPaths(a)).toEqual(['from-a.md', 'from-b.md'])
    const doc = await status(a)
    expect(doc.stateFiles.recovered).toEqual([expect.objectContaining({ file: join(state, 'index.sqlite'), problem: expect.stringContaining('missing') as string })])
    // What the pointer holds now has both devices' rows.
    expect(JSON.parse((await cli(['pointer', 'get', '--json', '--config', a])).stdout)).toMatchObject({ memories: 2 })
    expect((await daemon.stop()).code).toBe(0)
  })
})
