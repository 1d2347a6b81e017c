import { describe, it, expect } from 'vitest'
import { stopWhenFinished } from '../helpers/in-process-daemon.js'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { loadConfig } from '../../src/config/index.js'
import { Daemon, type StatusDocument } from '../../src/daemon/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within, until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'
import { writeTestConfig } from '../helpers/config-file.js'

const running: Daemon[] = []

async function status (port: number): Promise<StatusDocument> {
  return JSON.parse((await httpGet({ port }, '/status')).body) as StatusDocument
}

describe('a watched folder that holds the state dir', () => {
  it('never indexes the daemon\'s own files, settles, publishes, and says the state dir is left out', async () => {
    const dir = await useTempDir()
    // `cidsync init --folder ~` with the default state dir: ~/.local/state/cidsync inside ~.
    const home = join(dir, 'home')
    await mkdir(join(home, 'notes'), { recursive: true })
    await writeFile(join(home, 'notes', 'a.md'), 'hello')
    await writeTestConfig(dir, {
      state_dir: 'home/.local/state/cidsync',
      folders: [{ name: 'home', path: 'home' }],
      snapshot: { schedule: '0 0 1 1 *', quiet_seconds: 1, min_interval_seconds: 0 },
      reconcile: { schedule: '0 0 1 1 *' }
    })
    const messages: string[] = []
    const logger = pino({ level: 'warn', hooks: { logMethod (args, method) { messages.push(args.map(String).join(' ')); method.apply(this, args) } } }, { write: () => {} })
    const daemon = new Daemon({ logger }, { config: loadConfig({ configPath: join(dir, 'config.toml'), env: {} }) })
    stopWhenFinished(running, daemon)
    await within(daemon.start(), 10_000, 'the daemon to start')
    await within(daemon.current(), 10_000, 'the startup scan')
    const port = Number(daemon.statusAddress?.split(':').pop())
    const published = await until(async () => {
      const doc = await status(port)
      return doc.publish?.last != null ? doc : undefined
    }, 20_000, 'a publish after the folder went quiet')
    // a.md, and the directories on the way: notes/, .local/ and .local/state/ (never the state dir itself).
    expect(published.publish?.last?.entries).toBe(4)
    expect(published.folders[0]).toMatchObject({ name: 'home', files: 1 })
    expect(published.folders[0]?.notes.join('\n')).toMatch(/state dir .*\.local\/state\/cidsync.* inside this folder.*not indexed/)
    expect(messages.join('\n')).toMatch(/state dir .* inside the watched folder home/)
    // The daemon keeps writing its state dir (WAL, sync.sqlite, the embedded service): none of it is a change.
    const rowsWritten = published.index.rowsWritten
    await writeFile(join(home, 'notes', 'b.md'), 'more')
    const after = await until(async () => {
      const doc = await status(port)
      return doc.folders[0]?.files === 2 && doc.publish?.last?.entries === 5 ? doc : undefined
    }, 20_000, 'the next change published')
    expect(after.index.rowsWritten).toBe(rowsWritten + 1)
    // The drift check walks the folder afresh: the state dir is left out there too.
    const token = (await readFile(join(home, '.local', 'state', 'cidsync', 'status.token'), 'utf8')).trim()
    const drift = await httpGet({ port }, '/rescan', { method: 'POST', headers: { authorization: `Bearer ${token}` } })
    expect(JSON.parse(drift.body)).toMatchObject({ repaired: 0 })
    expect((await status(port)).folders[0]?.files).toBe(2)
  })
})
