import { describe, expect, it } from 'vitest'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess } from '../helpers/cli.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound, until } from '../helpers/wait.js'
import { contentDevice, contentObjects, ok, shareKey, tree, uploadCounts, writeSomeFiles } from '../cli/content-devices.js'

// Fewer than cli/content-crash's 20: after a restart, storing can wait for the next publish to resume (see the closing note of 2026-11-24).
const KILLS = 4
/** `[content] concurrency`'s default: the uploads a kill can catch in flight. */
const UPLOADS_AT_ONCE = 2

interface ContentStatus { folders: Array<{ protected: { files: number }, pending: { files: number } }> }

describe.skipIf(EXTERNAL)('a daemon killed with SIGKILL while it stores content (processes)', () => {
  it(`killed ${KILLS} times mid-upload, each restart resumes: every byte comes back, at most one object per upload in flight sent again per kill, no spool file left`, async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    for (let i = 0; i < 3; i++) await writeSomeFiles(a.folder, `dir-${i}`, { largeBytes: 6 * 1024 * 1024 + i, small: 60 })
    const files = 3 * 61
    // Each upload slowed a little, so storing spans the kills.
    service.local.faults.set('upload', { latencyMs: 150 })
    const uploads = (): number => service.local.requestLog().filter(r => r.route === 'upload').length
    let kills = 0
    // A pass that stored files says so when it ends: a kill after it caught nothing in flight.
    const storedAll = (daemon: DaemonProcess): boolean => daemon.stderr.includes('"msg":"stored content"')
    for (let run = 0; run < KILLS * 3 && kills < KILLS; run++) {
      const before = uploads()
      const daemon = new DaemonProcess(['--config', a.config], { env: a.env })
      const deadline = Date.now() + bound(60_000)
      while (uploads() <= before && !storedAll(daemon) && daemon.ended === undefined && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 5))
      if (!storedAll(daemon)) await new Promise(resolve => setTimeout(resolve, Math.floor(Math.random() * 600)))
      const storedBeforeKill = storedAll(daemon)
      const { code } = await daemon.stop('SIGKILL')
      expect(code, daemon.stderr).toBeNull()
      // Storing ended before this kill (a fast machine stores it all in fewer runs): no kill mid-upload left to make.
      if (storedBeforeKill) break
      kills++
    }
    // The first upload lands after 150 ms and the rest take a second or more at two at once, so the first kill always comes mid-pass.
    expect(kills, 'kills that landed while content was still being stored').toBeGreaterThanOrEqual(1)
    service.local.faults.clear()
    const daemon = new DaemonProcess(['--config', a.config], { env: a.env })
    await until(async () => {
      // Until the daemon answers, status prints no JSON: keep waiting.
      let c: ContentStatus | undefined
      try {
        c = (JSON.parse((await a.run(['status', '--json'])).stdout) as { content?: ContentStatus }).content
      } catch {
        return undefined
      }
      return c?.folders[0]?.protected.files === files && c.folders[0].pending.files === 0 ? c : undefined
    }, 120_000, 'every file stored after the last restart', 500)
    expect(await readdir(join(a.state, 'content-spool')).catch(() => []), 'part and pack files of killed runs').toEqual([])
    await daemon.stop()

    const counts = await uploadCounts(service)
    const objects = contentObjects(a)
    const repeated = [...objects].reduce((sum, o) => sum + Math.max(0, (counts.get(o) ?? 0) - 1), 0)
    // A kill repeats at most what was in flight: one object per upload slot ([content] concurrency, 2 by default).
    expect(repeated, `objects sent more than once over ${kills} kills`).toBeLessThanOrEqual(kills * UPLOADS_AT_ONCE)
    await ok(a, ['snapshot'])
    await ok(b, ['restore'])
    const to = join(root, 'back')
    await ok(b, ['restore', '--files', '--to', to])
    expect(await tree(join(to, 'notes'))).toEqual(await tree(a.folder))
  }, 900_000)
})
