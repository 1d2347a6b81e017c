import { describe, it, expect, onTestFinished } from 'vitest'
import { spawnSync } from 'node:child_process'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { until } from '../helpers/wait.js'

describe('a publish on a full disk', () => {
  it('answers a coded error that says what to do, and the next publish goes through once there is room', async () => {
    const dir = await useTempDir()
    const { port, token, notes } = await startInProcessDaemon(dir, { snapshot: { quiet_seconds: 3600, min_interval_seconds: 3600 } })
    await writeFile(join(notes, 'a.md'), 'alpha')
    await until(async () => (await statusOf(port)).index.files === 1 || undefined, 20_000, 'a.md indexed')
    await untilReached(port)
    const post = async (path: string): Promise<{ status: number, body: string }> => await httpGet({ port }, path, { method: 'POST', headers: { authorization: `Bearer ${token}` } })

    // SQLite's answer when the disk holding the state dir is full, at the publish's first write.
    process.env.CIDSYNC_FAILPOINT = 'publish:snapshot=SQLITE_FULL'
    onTestFinished(() => { delete process.env.CIDSYNC_FAILPOINT })
    const full = await post('/snapshot')
    expect(full.status).toBe(502)
    const answer = JSON.parse(full.body) as { code: string, error: string }
    expect(answer.code).toBe('ERR_PUBLISH_WRITE')
    expect(answer.error).toContain(`publishing could not write in the state dir ${join(dir, 'state')} (SQLITE_FULL): the disk (or the file system's quota) holding it is full: free some space`)
    expect(answer.error).toContain('the publish resumes where it stopped on its next run')

    delete process.env.CIDSYNC_FAILPOINT
    const room = await post('/snapshot')
    expect(room.status).toBe(200)
    expect(JSON.parse(room.body)).toMatchObject({ skipped: false })
  })

  // Root can mount a small tmpfs for the state dir and fill it: the disk itself, not a failpoint.
  const canMount = process.getuid?.() === 0 && spawnSync('mount', ['--version']).status === 0
  it.runIf(canMount)('on a real full tmpfs: the same coded answer, and a publish once room is made', async () => {
    const dir = await useTempDir()
    const state = join(dir, 'state')
    await mkdir(state, { mode: 0o700 })
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=48m,mode=0700', 'tmpfs', state]).status !== 0) return
    onTestFinished(() => { spawnSync('umount', ['-l', state]) })
    const { port, token, notes } = await startInProcessDaemon(dir, { snapshot: { quiet_seconds: 3600, min_interval_seconds: 3600 } })
    await writeFile(join(notes, 'a.md'), 'alpha')
    await until(async () => (await statusOf(port)).index.files === 1 || undefined, 20_000, 'a.md indexed')
    await untilReached(port)
    const post = async (path: string): Promise<{ status: number, body: string }> => await httpGet({ port }, path, { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    // Fill what is left, a MiB at a time, until the file system refuses.
    const filler = join(state, 'filler')
    const piece = Buffer.alloc(1024 * 1024, 1)
    for (let i = 0; i < 64; i++) {
      try { await writeFile(`${filler}-${i}`, piece) } catch { break }
    }
    const full = await post('/snapshot')
    expect(full.status).toBe(502)
    const answer = JSON.parse(full.body) as { code: string, error: string }
    expect(answer.code).toBe('ERR_PUBLISH_WRITE')
    expect(answer.error).toMatch(/\((SQLITE_FULL|ENOSPC)\): the disk \(or the file system's quota\) holding it is full: free some space/)
    for (let i = 0; i < 64; i++) await rm(`${filler}-${i}`, { force: true })
    const room = await post('/snapshot')
    expect(room.status).toBe(200)
  })
})
