import { describe, expect, it } from 'vitest'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, contentObjects, KillDelay, ok, runAndKill, shareKey, tree, uploadCounts, writeSomeFiles } from './content-devices.js'

const KILLS = 20
/** Kills are cut short of a run this often at most: a bound, not a wait. */
const MAX_RUNS = 80
/** `[content] concurrency`'s default: the uploads a kill can catch in flight. */
const UPLOADS_AT_ONCE = 2

const requests = (service: Awaited<ReturnType<typeof localServiceUnderTest>>, route: string): number =>
  service.local.requestLog().filter(r => r.route === route).length

const leftovers = async (dir: string): Promise<string[]> => (await readdir(dir, { recursive: true }).catch(() => [])).map(String)

describe.skipIf(EXTERNAL)('content custody killed with SIGKILL at random moments (processes)', () => {
  it(`a snapshot killed ${KILLS} times while uploading resumes each time: every byte comes back on a second device, at most one object per upload in flight sent again per kill`, async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    let round = 0
    await writeSomeFiles(a.folder, `round-${round}`, { largeBytes: 9 * 1024 * 1024 + 123, small: 90 })
    let kills = 0
    const delay = new KillDelay(800)
    for (let run = 0; kills < KILLS; run++) {
      expect(run, 'runs without reaching the kills').toBeLessThan(MAX_RUNS)
      const before = requests(service, 'upload')
      // Once an upload of this run landed, a random moment later: mid-part, mid-pack, between, or in the publish.
      const ended = await runAndKill(a, ['snapshot'], () => requests(service, 'upload') > before, delay.next())
      delay.ended(ended.killed)
      if (ended.killed) { kills++; continue }
      expect(ended.code, ended.stderr).toBe(0)
      await writeSomeFiles(a.folder, `round-${++round}`, { largeBytes: 5 * 1024 * 1024 + round, small: 60 })
    }
    const last = await ok(a, ['snapshot'])
    expect(last.stderr).not.toContain('not stored')

    expect(await leftovers(join(a.state, 'content-spool')), 'part and pack files of killed runs').toEqual([])
    const counts = await uploadCounts(service)
    const objects = contentObjects(a)
    const repeated = [...objects].reduce((sum, o) => sum + Math.max(0, (counts.get(o) ?? 0) - 1), 0)
    expect([...objects].filter(o => counts.get(o) === undefined), 'objects no upload holds').toEqual([])
    // A kill repeats at most what was in flight: one object per upload slot ([content] concurrency, 2 by default).
    expect(repeated, `objects sent more than once over ${kills} kills`).toBeLessThanOrEqual(kills * UPLOADS_AT_ONCE)

    await ok(b, ['restore'])
    const to = join(root, 'back')
    const back = await ok(b, ['restore', '--files', '--to', to])
    expect(back.stdout).toContain('written, 0 already right')
    expect(await tree(join(to, 'notes'))).toEqual(await tree(a.folder))
  }, 900_000)

  it(`restore --files killed ${KILLS} times resumes each time: every byte right, no half-written file, nothing left behind`, async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    for (let i = 0; i < 3; i++) await writeSomeFiles(a.folder, `dir-${i}`, { largeBytes: 5 * 1024 * 1024 + i, small: 60 })
    await ok(a, ['snapshot'])
    await ok(b, ['restore'])
    const want = await tree(a.folder)
    const to = join(root, 'back')
    let kills = 0
    const delay = new KillDelay(300)
    for (let run = 0; kills < KILLS; run++) {
      expect(run, 'runs without reaching the kills').toBeLessThan(MAX_RUNS)
      const before = requests(service, 'gateway')
      const ended = await runAndKill(b, ['restore', '--files', '--to', to], () => requests(service, 'gateway') > before, delay.next())
      delay.ended(ended.killed)
      if (ended.killed) {
        kills++
        // Whatever is there under its real name is whole.
        const got = await tree(join(to, 'notes')).catch(() => new Map<string, string>())
        for (const [path, sha] of got) if (!path.split('/').some(p => p.startsWith('.'))) expect(sha, path).toBe(want.get(path))
        continue
      }
      expect(ended.code, ended.stderr).toBe(0)
      // All back: start again into an empty dir, so every kill lands mid-restore.
      const { rm } = await import('node:fs/promises')
      await rm(to, { recursive: true, force: true })
    }
    const last = await ok(b, ['restore', '--files', '--to', to])
    expect(last.stdout).toContain('files written')
    expect(await tree(join(to, 'notes')), 'every file, and nothing else (no temp file of a killed run)').toEqual(want)
    expect(await leftovers(join(b.state, 'content-fetch')), 'objects fetched by killed runs').toEqual([])
  }, 900_000)
})
