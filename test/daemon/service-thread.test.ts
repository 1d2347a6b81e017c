import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { httpGet } from '../helpers/http.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

// The embedded service gets a thread of its own only in a daemon that stores content: the thread
// keeps content storing off the daemon's own thread; without content it costs memory for nothing.
describe('the daemon\'s embedded service', () => {
  it('runs in a thread of its own when a folder stores content, and the content is stored', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'kept'))
    await writeFile(join(dir, 'kept', 'a.txt'), 'kept bytes')
    const { port } = await startInProcessDaemon(dir, '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n')
    const reached = await untilReached(port)
    expect(reached.service.endpoint).toContain('in a thread of its own')
    await until(async () => {
      const kept = (await statusOf(port)).content?.folders.find(f => f.folder === 'kept')
      return kept?.protected.files === 1 && kept.pending.files === 0 ? kept : undefined
    }, 60_000, 'the storing folder\'s file stored')
  })

  it('stays on the daemon\'s thread when no folder stores content, and a publish goes through it', async () => {
    const dir = await useTempDir()
    const { port, token, notes } = await startInProcessDaemon(dir)
    await writeFile(join(notes, 'a.md'), 'indexed only')
    const reached = await untilReached(port)
    expect(reached.service.endpoint).toContain('the embedded service at')
    expect(reached.service.endpoint).not.toContain('thread')
    await until(async () => (await statusOf(port)).folders.find(f => f.name === 'notes')?.files === 1 || undefined, 20_000, 'the file indexed')
    const published = await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    expect(published.status, published.body).toBe(200)
    expect(JSON.parse(published.body)).toMatchObject({ entries: 1 })
  })
})
