import { describe, it, expect } from 'vitest'
import { chmod, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { device, expectIndexEqualsFolder, ok, proofDir, remoteDevice, rows, seeded, serviceProcess, shareKey, status, type Device, writeFiles } from './harness.js'

/**
 * Bad input: what a forged or damaged thing does to each command. Every case names its exit code
 * and checks that nothing the device held was lost. Each `it` stands alone:
 * `npx vitest run test/proof/bad-input.test.ts -t 'forged'`.
 */
const sorted = async (d: Device): Promise<string[]> => (await rows(d, true)).map(r => `${r.device}|${r.folder}/${r.path}|${r.cid ?? ''}|${r.seq}|${String(r.deleted)}`).sort()

/** A published device A and the rows it holds. */
async function published (root: string): Promise<{ a: Device, held: string[], cid: string }> {
  const rng = seeded('bad-input')
  const a = await device(root, 'a')
  await writeFiles(a.folder, 30, rng)
  const cid = (JSON.parse((await ok(['snapshot', '--json', '--config', a.config])).stdout) as { cid: string }).cid
  return { a, held: await sorted(a), cid }
}

/** Uploads `bytes` to the shared embedded service's account and points A's pointer at them. */
async function pointAt (root: string, a: Device, bytes: Uint8Array): Promise<string> {
  const { startLocalService } = await import('../../src/local-service/index.js')
  const service = await startLocalService({ dir: join(root, 'service') })
  try {
    const account = JSON.parse(await readFile(join(root, 'service', 'embedded-account.json'), 'utf8')) as { apiKey: string }
    const form = new FormData()
    form.append('file', new Blob([bytes]), 'snapshot')
    const res = await fetch(`${service.url}/api/v0/add?cid-version=1&raw-leaves=true&chunker=size-262144&wrap-with-directory=false`, { method: 'POST', headers: { authorization: `Bearer ${account.apiKey}` }, body: form })
    expect(res.status).toBe(200)
    const cid = (await res.json() as { Hash: string }).Hash
    await service.stop()
    // --force: pointer put refuses what it cannot open, and that is the point here.
    await ok(['pointer', 'put', cid, '--force', '--config', a.config])
    return cid
  } finally {
    await service.stop().catch(() => undefined)
  }
}

async function snapshotBytes (root: string, cid: string): Promise<Buffer> {
  const { startLocalService } = await import('../../src/local-service/index.js')
  const service = await startLocalService({ dir: join(root, 'service') })
  try {
    return Buffer.from(await (await fetch(`${service.url}/ipfs/${cid}`)).arrayBuffer())
  } finally {
    await service.stop()
  }
}

/** Each case starts a few processes; on a loaded 2-core machine that takes a while. */
const TIMEOUT = 90_000

describe('proof: bad input', () => {
  it('a forged unencrypted snapshot behind the pointer is refused (exit 4) by restore and merge when encryption is required, and nothing is lost', async () => {
    const root = await proofDir()
    const { a, held } = await published(root)
    // Someone with the account's credentials but not the key publishes rows of their own, unencrypted.
    const forger = await device(root, 'forger', { extra: 'namespace = "forged"\n[snapshot]\nencryption = "none"\n' })
    await writeFile(join(forger.folder, 'injected.txt'), 'not yours')
    const forged = (JSON.parse((await ok(['snapshot', '--json', '--config', forger.config])).stdout) as { cid: string }).cid
    await ok(['pointer', 'put', forged, '--force', '--config', a.config])
    const restore = await runCli(['restore', '--force', '--config', a.config])
    expect(restore.code, restore.stderr).toBe(4)
    expect(await sorted(a)).toEqual(held)
    await writeFile(join(a.folder, 'new.txt'), 'a change, so the publish reads the pointer')
    const merge = await runCli(['snapshot', '--config', a.config])
    expect(merge.code, merge.stderr).toBe(4)
    expect((await rows(a, true)).map(r => r.path)).not.toContain('injected.txt')
    const b = await device(root, 'b')
    await shareKey(a, b)
    expect((await runCli(['restore', '--config', b.config])).code).toBe(4)
    expect(existsSync(join(b.state, 'index.sqlite'))).toBe(false)
  }, TIMEOUT)

  it('a truncated or corrupted snapshot behind the pointer is refused (exit 4); the existing index stays whole', async () => {
    const root = await proofDir()
    const { a, held, cid } = await published(root)
    const bytes = await snapshotBytes(root, cid)
    const middle = Math.floor(bytes.length / 2)
    const corrupted = Buffer.from(bytes)
    corrupted.writeUInt8(corrupted.readUInt8(middle) ^ 0x40, middle)
    for (const [damage, bad] of [['truncated', bytes.subarray(0, middle)], ['corrupted', corrupted]] as const) {
      await pointAt(root, a, bad)
      const restore = await runCli(['restore', '--force', '--config', a.config])
      expect(restore.code, `${damage}: ${restore.stderr}`).toBe(4)
      expect(await sorted(a), damage).toEqual(held)
    }
  }, TIMEOUT)

  it('a pointer to a missing CID: restore exits 3, a publish says to run `cidsync pointer repair`, which puts things right keeping every row', async () => {
    const root = await proofDir()
    const { a, held } = await published(root)
    await writeFile(join(root, 'never-uploaded'), `nobody uploaded this ${Date.now()}`)
    const missing = (await ok(['cid', join(root, 'never-uploaded')])).stdout.split(/\s+/)[0] as string
    await ok(['pointer', 'put', missing, '--force', '--config', a.config])
    const restore = await runCli(['restore', '--force', '--config', a.config])
    expect(restore.code, restore.stderr).toBe(3)
    expect(await sorted(a)).toEqual(held)
    await writeFile(join(a.folder, 'new.txt'), 'a change')
    const blocked = await runCli(['snapshot', '--config', a.config])
    expect(blocked.code).not.toBe(0)
    expect(blocked.stderr).toContain('cidsync pointer repair')
    const repaired = await runCli(['pointer', 'repair', '--yes', '--config', a.config])
    expect(repaired.code, repaired.stderr).toBe(0)
    const b = await device(root, 'b')
    await shareKey(a, b)
    await ok(['restore', '--config', b.config])
    expect(await sorted(b)).toEqual(await sorted(a))
    expect((await rows(b, true)).map(r => r.path)).toContain('new.txt')
  }, TIMEOUT)

  it('a damaged index.sqlite is moved aside at start and rebuilt from the folder, and the daemon says so', async () => {
    const root = await proofDir()
    const { a } = await published(root)
    const path = join(a.state, 'index.sqlite')
    const size = (await stat(path)).size
    expect(existsSync(`${path}-wal`) ? (await stat(`${path}-wal`)).size : 0).toBe(0)
    const garbage = Buffer.alloc(size - 4096, 0xa5)
    const file = await (await import('node:fs/promises')).open(path, 'r+')
    await file.write(garbage, 0, garbage.length, 4096)
    await file.close()
    const daemon = new DaemonProcess(['--config', a.config])
    await daemon.logged('index current', 30_000)
    await expectIndexEqualsFolder(a, 'after rebuilding a damaged index')
    const aside = (await readdir(a.state)).filter(n => n.startsWith('index.sqlite') && !/^index\.sqlite(-wal|-shm)?$/.test(n))
    expect(aside, 'the damaged index kept beside the new one').toHaveLength(1)
    expect(daemon.stderr).toMatch(/damaged|corrupt/i)
    expect((await daemon.stop()).code).toBe(0)
  }, TIMEOUT)

  it('a damaged sync.sqlite does not take /status down; indexing goes on', async () => {
    const root = await proofDir()
    const { a } = await published(root)
    await writeFile(join(a.state, 'sync.sqlite'), Buffer.alloc(8192, 0x5a))
    const daemon = new DaemonProcess(['--config', a.config])
    await daemon.logged('index current', 30_000)
    expect((await status(a)).watcher).toBeDefined()
    await writeFile(join(a.folder, 'after.txt'), 'still indexed')
    const { until } = await import('../helpers/wait.js')
    await until(async () => (await rows(a)).some(r => r.path === 'after.txt') ? true : undefined, 30_000, 'a new file indexed')
    expect((await status(a)).watcher).toBeDefined()
    expect((await daemon.stop()).code).toBe(0)
  }, TIMEOUT)

  it('listen = "unix:PATH" where PATH is a regular file: the daemon refuses (exit 1, ERR_LISTEN) and the file is untouched', async () => {
    const root = await proofDir()
    const precious = join(root, 'precious.txt')
    await writeFile(precious, 'do not delete me')
    const a = await device(root, 'a', { status: `unix:${precious}` })
    const daemon = new DaemonProcess(['--config', a.config])
    const { until } = await import('../helpers/wait.js')
    const code = await until(() => daemon.ended?.code ?? undefined, 10_000, 'the daemon to refuse').catch(() => 'still running')
    expect(code, daemon.stderr).toBe(1)
    expect(daemon.stderr).toContain('[ERR_LISTEN]')
    expect(await readFile(precious, 'utf8')).toBe('do not delete me')
  }, TIMEOUT)

  it('credential files others can read are refused (exit 2) with the chmod to run: session token, API key, wallet key', async () => {
    const root = await proofDir()
    const service = await serviceProcess(join(root, 'service'))
    const a = await remoteDevice(root, 'a', service)
    for (const [name, command] of [['session-token', ['pointer', 'get']], ['api-key', ['files']]] as const) {
      await chmod(join(a.root, name), 0o644)
      const refused = await runCli([...command, '--config', a.config])
      expect(refused.code, `${name}: ${refused.stderr}`).toBe(2)
      expect(refused.stderr).toContain(`chmod 600 ${join(a.root, name)}`)
      await chmod(join(a.root, name), 0o600)
    }
    const walletFile = join(root, 'wallet-key')
    await writeFile(walletFile, a.walletKey, { mode: 0o644 })
    await chmod(walletFile, 0o644)
    const login = await runCli(['login', '--wallet-key-file', walletFile, '--config', a.config])
    expect(login.code, login.stderr).toBe(2)
    expect(login.stderr).toContain(`chmod 600 ${walletFile}`)
  }, TIMEOUT)
})
