import { describe, expect, it } from 'vitest'
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { removeLeftovers } from '../../../src/sync/state/leftovers.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { deadPid } from '../../helpers/dead-pid.js'

// `cidsync verify` takes no state-dir lock, so `cidsync snapshot`, `restore` or a daemon start may
// sweep leftovers while a drill runs beside them: a drill's files are removed only once its
// process is gone and no one touched them for a day (from another PID namespace a running drill
// looks gone), its scratch dir with them.
const dayAndHour = (): Date => new Date(Date.now() - 25 * 60 * 60_000)
describe('leftovers of a restore drill (cidsync verify)', () => {
  it('keeps a running drill\'s files: its index aside and what it fetched (its process is alive)', async () => {
    const state = await useTempDir()
    const snapshots = join(state, 'snapshots')
    await mkdir(snapshots)
    const running = [`verify-${process.pid}.sqlite`, `verify-${process.pid}.sqlite-wal`, `verify-${process.pid}.sqlite-shm`,
      `verify-${process.pid}-cbj4hrzayocmavoa.read`]
    for (const name of running) await writeFile(join(snapshots, name), Buffer.alloc(10))
    await removeLeftovers(state, [])
    expect((await readdir(snapshots)).sort()).toEqual(running.sort())
    // The same names of a process gone are removed, as are `history` and `log` fetches.
    const dead = await deadPid()
    const gone = [`verify-${dead}.sqlite`, `verify-${dead}-cbj4hrzayocmavoa.read`, `history-${dead}-cbj4hrzayocmavoa.sqlite`, `log-${dead}-cbj4hrzayocmavoa.read`, `verify-empty-${dead}.sqlite`]
    for (const name of gone) await writeFile(join(snapshots, name), Buffer.alloc(10))
    // Fresh, they stay: the process may run in another PID namespace.
    expect((await removeLeftovers(state, [])).files).toBe(0)
    for (const name of [...gone, ...running]) await utimes(join(snapshots, name), dayAndHour(), dayAndHour())
    const removed = await removeLeftovers(state, [])
    expect(removed.files).toBe(gone.length)
    expect((await readdir(snapshots)).sort()).toEqual(running.sort())
  })

  it('removes the temp dir a drill killed midway left (verify-content-PID/, with its objects)', async () => {
    const state = await useTempDir()
    const snapshots = join(state, 'snapshots')
    const dead = await deadPid()
    const left = join(snapshots, `verify-content-${dead}`)
    await mkdir(join(left, 'objects'), { recursive: true })
    await writeFile(join(left, 'objects', `bafybeiobject.${dead}.part`), Buffer.alloc(1000))
    await writeFile(join(left, '.file-2.cidsync-cf8a8e690003.part'), Buffer.alloc(1000))
    await utimes(left, dayAndHour(), dayAndHour())
    await removeLeftovers(state, [])
    expect(await readdir(snapshots)).toEqual([])
    // A live drill's dir stays.
    await mkdir(join(snapshots, `verify-content-${process.pid}`, 'objects'), { recursive: true })
    await removeLeftovers(state, [])
    expect(await readdir(snapshots)).toEqual([`verify-content-${process.pid}`])
  })
})
