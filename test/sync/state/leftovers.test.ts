import { describe, expect, it, onTestFinished } from 'vitest'
import { readdirSync } from 'node:fs'
import { chmod, lutimes, mkdir, readdir, symlink, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { removeDeadRunFiles, removeLeftovers } from '../../../src/sync/state/leftovers.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { deadPid } from '../../helpers/dead-pid.js'
import { DaemonProcess } from '../../helpers/cli.js'
import { EXTERNAL } from '../../helpers/service.js'
import { ok, runAndKill, writeSomeFiles } from '../../cli/content-devices.js'
import { exitDevice, freshService } from '../../exits/exit-devices.js'

describe('leftovers of killed runs', () => {
  it('removes the fetched objects and past index of a get killed midway, never a running one\'s', async () => {
    const state = await useTempDir()
    const dead = await deadPid()
    await mkdir(join(state, 'content-fetch', String(dead)), { recursive: true, mode: 0o700 })
    await writeFile(join(state, 'content-fetch', String(dead), 'bafkreiobject'), Buffer.alloc(1000))
    await mkdir(join(state, 'content-fetch', String(process.pid)), { recursive: true })
    await writeFile(join(state, 'content-fetch', String(process.pid), 'bafkreiobject'), Buffer.alloc(10))
    await mkdir(join(state, 'snapshots'), { mode: 0o700 })
    await writeFile(join(state, 'snapshots', `past-${dead}-1795533339393.sqlite`), Buffer.alloc(500))
    await writeFile(join(state, 'snapshots', `past-${process.pid}-1795533339393.sqlite`), Buffer.alloc(5))
    // A day old: a `get --at` in another PID namespace looks gone from here while it runs.
    const dayAndHour = new Date(Date.now() - 25 * 60 * 60_000)
    await utimes(join(state, 'snapshots', `past-${dead}-1795533339393.sqlite`), dayAndHour, dayAndHour)
    await writeFile(join(state, 'snapshots', `past-${dead}-1795533339394.sqlite`), Buffer.alloc(7))

    const removed = await removeLeftovers(state, [])
    expect(removed.bytes).toBe(1500)
    expect(await readdir(join(state, 'content-fetch'))).toEqual([String(process.pid)])
    expect((await readdir(join(state, 'snapshots'))).sort()).toEqual([`past-${dead}-1795533339394.sqlite`, `past-${process.pid}-1795533339393.sqlite`].sort())
  })
})

describe('leftovers of a killed prune', () => {
  it('removes the prune lists a killed prune sealed and a killed publish fetched, never a running one\'s', async () => {
    const state = await useTempDir()
    const snapshots = join(state, 'snapshots')
    await mkdir(snapshots, { mode: 0o700 })
    const dead = await deadPid()
    const left = [`prune-list-${dead}-0123456789ab.sealed`, `prune-list-${dead}-ba9876543210.fetched`, `prune-${dead}.sqlite`]
    const running = `prune-list-${process.pid}-0123456789ab.sealed`
    for (const name of [...left, running, 'prune-list-notes.txt']) await writeFile(join(snapshots, name), Buffer.alloc(10))
    await removeDeadRunFiles(state)
    expect((await readdir(snapshots)).sort()).toEqual([running, 'prune-list-notes.txt'].sort())
    await writeFile(join(snapshots, left[0] as string), Buffer.alloc(10))
    expect((await removeLeftovers(state, [])).files).toBe(1)
  })
})

describe('leftovers of killed drills and reads', () => {
  it('are removed once their process is gone and a day has passed, directories whole; a link is removed, never what it names', async () => {
    const state = await useTempDir()
    const snapshots = join(state, 'snapshots')
    await mkdir(snapshots, { mode: 0o700 })
    const dead = await deadPid()
    const outside = await useTempDir()
    await writeFile(join(outside, 'keep.txt'), 'not the drill\'s')
    const old = [`verify-${dead}.sqlite`, `verify-${dead}.sqlite-wal`, `verify-content-${dead}`, `log-${dead}-ab.read`, `history-${dead}`]
    await mkdir(join(snapshots, `verify-content-${dead}`, 'objects'), { recursive: true })
    await writeFile(join(snapshots, `verify-content-${dead}`, 'objects', 'bafkreiobject'), Buffer.alloc(10))
    await symlink(outside, join(snapshots, `history-${dead}`))
    for (const name of old.filter(n => !n.startsWith('verify-content') && !n.startsWith('history'))) await writeFile(join(snapshots, name), Buffer.alloc(10))
    // Fresh: a run in another PID namespace looks gone from here while it runs.
    const fresh = `verify-${dead}-bafkreimanifest.read`
    const running = `verify-${process.pid}.sqlite`
    for (const name of [fresh, running]) await writeFile(join(snapshots, name), Buffer.alloc(10))
    const dayAndHour = new Date(Date.now() - 25 * 60 * 60_000)
    for (const name of [...old, running]) await lutimes(join(snapshots, name), dayAndHour, dayAndHour)
    await removeDeadRunFiles(state)
    expect((await readdir(snapshots)).sort()).toEqual([fresh, running].sort())
    expect(await readdir(outside)).toEqual(['keep.txt'])
  })

  it('are never looked for through a linked snapshots folder, nor in one another user may write', async () => {
    const state = await useTempDir()
    const elsewhere = await useTempDir()
    const dead = await deadPid()
    const name = `prune-${dead}.sqlite`
    await writeFile(join(elsewhere, name), Buffer.alloc(10))
    await symlink(elsewhere, join(state, 'snapshots'))
    await removeDeadRunFiles(state)
    await removeLeftovers(state, [])
    expect(await readdir(elsewhere)).toEqual([name])
    const shared = await useTempDir()
    await mkdir(join(shared, 'snapshots'))
    await chmod(join(shared, 'snapshots'), 0o777)
    await writeFile(join(shared, 'snapshots', name), Buffer.alloc(10))
    await removeDeadRunFiles(shared)
    await removeLeftovers(shared, [])
    expect(await readdir(join(shared, 'snapshots'))).toEqual([name])
  })
})

describe('leftovers of a killed storing pass', () => {
  it('removes the content index objects a killed pass sealed or fetched into the spool, with their temps, and nothing else there', async () => {
    const state = await useTempDir()
    const spool = join(state, 'content-spool')
    await mkdir(spool, { mode: 0o700 })
    // Named by a process that ran and is gone: a live one's files are kept.
    const dead = await deadPid()
    const left = ['index-0123456789abcdef.sealed', `index-0123456789abcdef.sealed.${dead}.part`, 'index-fedcba9876543210.fetched',
      'index-fedcba9876543210.fetched.json', `index-fedcba9876543210.fetched.json.${dead}.unseal`, 'pack-0123456789abcdef.tmp']
    for (const name of [...left, 'index-notes.txt']) await writeFile(join(spool, name), Buffer.alloc(10))
    const removed = await removeLeftovers(state, [])
    expect(removed.files).toBe(left.length)
    expect(await readdir(spool)).toEqual(['index-notes.txt'])
  })
})

describe.skipIf(EXTERNAL)('leftovers of a killed export and import', () => {
  it('what an export and an import killed with SIGKILL leave in snapshots/ is removed when the daemon starts; a running one\'s is kept', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 2 * 1024 * 1024 + 1, small: 20 })
    await ok(a, ['snapshot'])
    const snapshots = join(a.state, 'snapshots')
    const ours = (prefix: string) => (): boolean => readdirSync(snapshots).some(n => n.startsWith(prefix))
    // Killed while it reads the records of the index it built aside, and while the import checks the chain.
    // Each fetch held 300 ms meanwhile: the files live that long at least, so the 5 ms look sees
    // them and the kill lands before the run ends, however fast the machine.
    one.local.faults.set('gateway', { latencyMs: 300 })
    const exported = await runAndKill(a, ['export', '--car', join(root, 'a.car'), '--content'], ours('export-content-'), 0)
    expect(exported.killed, exported.stderr).toBe(true)
    one.local.faults.clear()
    await ok(a, ['export', '--car', join(root, 'b.car')])
    one.local.faults.set('gateway', { latencyMs: 300 })
    const imported = await runAndKill(a, ['import', '--car', join(root, 'b.car')], ours('import-'), 0)
    one.local.faults.clear()
    expect(imported.killed, imported.stderr).toBe(true)
    const left = (await readdir(snapshots)).filter(n => /^(export|import)-/.test(n))
    expect(left.length, 'files the killed runs left').toBeGreaterThan(0)
    // One of a run still going (this process) is not touched.
    const running = `export-content-${process.pid}.sqlite`
    await writeFile(join(snapshots, running), Buffer.alloc(10))

    const daemon = new DaemonProcess(['--config', a.config], { env: a.env })
    onTestFinished(async () => { await daemon.stop() })
    await daemon.logged('service ready', 60_000)
    expect((await readdir(snapshots)).filter(n => /^(export|import)-/.test(n))).toEqual([running])
  }, 300_000)
})
