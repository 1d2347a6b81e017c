import { describe, it, expect } from 'vitest'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'

const config = (root: string, folders: string[], extra = ''): string => `state_dir = "state"
${folders.map(f => `[[folders]]\nname = "${f}"\npath = "${f}"\n`).join('')}[status]
listen = "127.0.0.1:0"
${extra}`

async function paths (file: string): Promise<string[]> {
  const ls = await runCli(['ls', '--json', '--config', file])
  if (ls.code !== 0) throw new Error(`ls failed: ${ls.stderr}`)
  return (JSON.parse(ls.stdout) as Array<{ folder: string, path: string }>).map(e => `${e.folder}/${e.path}`).sort()
}

describe('running as a service', () => {
  it('applies a reloaded config on SIGHUP: a folder added is indexed, one removed is dropped; a bad config is refused', async () => {
    const root = await useTempDir()
    for (const f of ['notes', 'photos']) await mkdir(join(root, f))
    await writeFile(join(root, 'notes', 'n.md'), 'n')
    await writeFile(join(root, 'photos', 'p.jpg'), 'p')
    const file = join(root, 'c.toml')
    await writeFile(file, config(root, ['notes']))
    const daemon = new DaemonProcess(['--config', file])
    await daemon.logged('watching')
    expect(await paths(file)).toEqual(['notes/n.md'])

    await writeFile(file, config(root, ['photos']))
    daemon.child.kill('SIGHUP')
    expect(await daemon.logged('reloaded')).toMatchObject({ added: ['photos'], removed: ['notes'] })
    await until(async () => JSON.stringify(await paths(file)) === JSON.stringify(['photos/p.jpg']) ? true : undefined, 10_000, 'the photos folder to replace notes')
    await writeFile(join(root, 'photos', 'later.jpg'), 'later')
    await until(async () => (await paths(file)).includes('photos/later.jpg') ? true : undefined, 10_000, 'a new file in the added folder')

    await writeFile(file, '[snapshot]\nencryption = "rot13"\n')
    daemon.child.kill('SIGHUP')
    await until(() => daemon.stderr.includes('reload refused') ? true : undefined, 10_000, 'the refusal')
    await writeFile(join(root, 'photos', 'still.jpg'), 'still watched')
    await writeFile(file, config(root, ['photos'])) // for ls; the daemon was not told to reload
    await until(async () => (await paths(file)).includes('photos/still.jpg') ? true : undefined, 10_000, 'watching to go on with the old config')
    expect((await daemon.stop()).code).toBe(0)
  })

  it('stops cleanly on SIGTERM within its stop timeout while a publish is in flight, and the publish resumes next start', async () => {
    const root = await useTempDir()
    await mkdir(join(root, 'notes'))
    await writeFile(join(root, 'notes', 'a.md'), 'a')
    const file = join(root, 'c.toml')
    await writeFile(file, config(root, ['notes']))
    const daemon = new DaemonProcess(['--config', file], { env: { ...process.env, CIDSYNC_EMBEDDED_ADMIN: '1' } })
    const ready = await daemon.logged('service ready') as { service: string }
    const serviceUrl = /http:\/\/127\.0\.0\.1:\d+/.exec(ready.service)?.[0] as string
    // The embedded service's admin route (asked for above): every upload now takes 20 s.
    const adminToken = (await readFile(join(root, 'state', 'service', 'admin.token'), 'utf8')).trim()
    const { request } = await import('undici')
    const faulted = await request(`${serviceUrl}/local/faults`, { method: 'PUT', headers: { authorization: `Bearer ${adminToken}` }, body: JSON.stringify({ upload: { latencyMs: 20_000 } }) })
    await faulted.body.dump()
    expect(faulted.statusCode).toBe(200)
    const info = JSON.parse(await readFile(join(root, 'state', 'daemon.json'), 'utf8')) as { status: string }
    const token = (await readFile(join(root, 'state', 'status.token'), 'utf8')).trim()
    const port = Number(info.status.split(':').pop())
    const inFlight = httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } }).catch(() => undefined)
    await until(() => daemon.stderr.includes('"step":"upload"') || daemon.stderr.includes('publish step') ? true : undefined, 5_000, 'the publish to start').catch(() => undefined)
    await new Promise(resolve => setTimeout(resolve, 500))
    const stopped = await daemon.stop('SIGTERM')
    expect(stopped.code, daemon.stderr.split('\n').slice(-6).join('\n')).toBe(0)
    expect(stopped.ms).toBeLessThan(15_000)
    await inFlight
    const published = await runCli(['snapshot', '--json', '--config', file])
    expect(published.code).toBe(0)
    expect(JSON.parse(published.stdout)).toMatchObject({ skipped: false, entries: 1 })
  })
})
