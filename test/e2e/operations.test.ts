import { describe, it, expect, afterEach } from 'vitest'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound, until } from '../helpers/wait.js'
import { httpGet } from '../helpers/http.js'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { createServiceClients, type ServiceClients } from '../../src/remote/index.js'
import { PointerNotFoundError } from '../../src/errors.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { SyncStore } from '../../src/sync/index.js'

const stopAfter: Array<LocalService | ServiceClients> = []
afterEach(async () => { for (const s of stopAfter.splice(0).reverse()) await ('stop' in s ? s.stop() : s.close()) })

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
    // The service in this process, so its faults are set directly: every upload takes 20 s.
    const local = await startLocalService({ dir: join(root, 'service') })
    stopAfter.push(local)
    local.faults.set('upload', { latencyMs: 20_000 })
    const credentials: { apiKey?: string, sessionToken?: string } = {}
    const clients = createServiceClients({ dealUrl: local.url, apiUrl: local.url, pointerUrl: local.url, uploadUrl: local.url, gateways: [local.url] }, { apiKey: () => credentials.apiKey, sessionToken: () => credentials.sessionToken })
    stopAfter.push(clients)
    const { address, apiKey } = await clients.deals.login(newWalletKey())
    Object.assign(credentials, { apiKey, sessionToken: local.issueToken(address) })
    const env = { ...process.env, CIDSYNC_API_KEY: credentials.apiKey, CIDSYNC_SESSION_TOKEN: credentials.sessionToken }
    const file = join(root, 'c.toml')
    // At debug level: the wait below reads the publish's step lines.
    await writeFile(file, `log_level = "debug"\n${config(root, ['notes'])}
[service]
mode = "remote"
deal_url = "${local.url}"
api_url = "${local.url}"
pointer_url = "${local.url}"
upload_url = "${local.url}"
gateways = ["${local.url}"]
`)
    const daemon = new DaemonProcess(['--config', file], { env })
    await daemon.logged('service ready')
    const info = JSON.parse(await readFile(join(root, 'state', 'daemon.json'), 'utf8')) as { status: string }
    const token = (await readFile(join(root, 'state', 'status.token'), 'utf8')).trim()
    const port = Number(info.status.split(':').pop())
    const inFlight = httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } }).catch(() => undefined)
    // The publish has reached its upload, which the service holds for 20 s.
    await until(() => daemon.stderr.split('\n').some(l => l.includes('"msg":"publish step"') && l.includes('"step":"upload"')) ? true : undefined, 10_000, 'the publish to reach its upload')
    const status = JSON.parse((await runCli(['status', '--json', '--config', file], { env })).stdout) as { publish: { running: boolean } | null }
    expect(status.publish?.running).toBe(true)

    const stopped = await daemon.stop('SIGTERM')
    expect(stopped.code, daemon.stderr.split('\n').slice(-6).join('\n')).toBe(0)
    // Well inside the upload's 20 s: the stop cut it rather than waiting for it. Exit 0 is the
    // daemon's own word that its stop beat its 9 s stop timeout (past it, it exits 1 saying the
    // clean stop took longer); the time seen from here adds this process's own waits.
    expect(daemon.stderr).not.toContain('the clean stop took longer')
    expect(stopped.ms).toBeLessThan(bound(10_000))
    expect(daemon.stderr).toContain('"msg":"daemon stopped"')
    await inFlight
    const jobs = new SyncStore(join(root, 'state'))
    const cut = jobs.current()
    jobs.close()
    expect(cut).toMatchObject({ step: 'upload', snapshotCid: expect.stringMatching(/^baf/) })
    await expect(clients.pointers.current('default', 'mainnet')).rejects.toThrow(PointerNotFoundError)

    local.faults.clear()
    const published = await runCli(['snapshot', '--json', '--config', file], { env })
    expect(published.code, published.stderr).toBe(0)
    expect(JSON.parse(published.stdout)).toMatchObject({ skipped: false, entries: 1, cid: cut?.snapshotCid })
  })
})
