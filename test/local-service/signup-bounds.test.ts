import { describe, expect, it, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { cidProfile } from '../../src/content/index.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { startLocalService, type AccountPolicy, type LocalService } from '../../src/local-service/index.js'
import { createServiceClients, type ServiceClients } from '../../src/remote/index.js'
import { CLI, runCli } from '../helpers/cli.js'
import { storedBlockCount } from '../helpers/service-blocks.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound, until } from '../helpers/wait.js'

const clientsOf = (url: string, apiKey?: string): ServiceClients => {
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => apiKey, sessionToken: () => undefined }, { retry: { attempts: 1 } })
  onTestFinished(async () => { await clients.close() })
  return clients
}

async function service (dir: string, policy: Partial<AccountPolicy>): Promise<LocalService> {
  const local = await startLocalService({ dir, policy: { signup: 'open', allow: [], maxBytesPerAccount: 0, maxIpnsKeysPerAccount: 0, ...policy } })
  onTestFinished(async () => { await local.stop() })
  return local
}

describe('what sign-up can take from a shared service', () => {
  it('many accounts share max_bytes_total: sign-up no longer multiplies the quota', async () => {
    const dir = await useTempDir()
    const local = await service(join(dir, 's'), { maxBytesPerAccount: 1_000_000, maxBytesTotal: 2_500_000 })
    const accounts = []
    for (let i = 0; i < 4; i++) {
      const { apiKey } = await clientsOf(local.url).deals.login(newWalletKey())
      accounts.push(clientsOf(local.url, apiKey))
    }
    const stored: string[] = []
    for (let i = 0; i < 2; i++) {
      const file = join(dir, `f${i}.bin`)
      await writeFile(file, Buffer.alloc(900_000, i + 1))
      stored.push((await (accounts[i] as ServiceClients).objects.put(file, cidProfile('kubo-cidv1'))).cid)
    }
    const blocks = storedBlockCount(join(dir, 's'))
    // Each account is under its own quota; together they would pass the total.
    const third = join(dir, 'f2.bin')
    await writeFile(third, Buffer.alloc(900_000, 3))
    await expect((accounts[2] as ServiceClients).objects.put(third, cidProfile('kubo-cidv1'))).rejects.toThrow(/max_bytes_total/)
    expect(storedBlockCount(join(dir, 's'))).toBe(blocks)
    // Under the total, another account still stores.
    const small = join(dir, 'small.bin')
    await writeFile(small, Buffer.alloc(500_000, 4))
    await (accounts[3] as ServiceClients).objects.put(small, cidProfile('kubo-cidv1'))
  })

  it('open sign-up makes at most signupsPerHour accounts an hour (429, Retry-After); an account already made signs in again', async () => {
    const dir = await useTempDir()
    const local = await service(join(dir, 's'), { signupsPerHour: 3 })
    const first = newWalletKey()
    await clientsOf(local.url).deals.login(first)
    for (let i = 0; i < 2; i++) await clientsOf(local.url).deals.login(newWalletKey())
    await expect(clientsOf(local.url).deals.login(newWalletKey())).rejects.toThrow(/3 accounts were made here in the last hour/)
    const { request } = await import('undici')
    const refused = await request(`${local.url}/api/v1/user/get_auth_message?publicKey=0x${'ab'.repeat(20)}`)
    await refused.body.dump()
    expect(refused.statusCode).toBe(429)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3000)
    expect((await clientsOf(local.url).deals.login(first)).apiKey).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('invite: a new wallet needs a code the operator made, good for one account', async () => {
    const dir = await useTempDir()
    const local = await service(join(dir, 's'), { signup: 'invite' })
    await expect(clientsOf(local.url).deals.login(newWalletKey())).rejects.toThrow(/needs an invitation/)
    await expect(clientsOf(local.url).deals.login(newWalletKey(), { invite: 'a-code-never-made-here' })).rejects.toThrow(/invitation is not valid/)
    const code = local.invite()
    const invited = newWalletKey()
    expect((await clientsOf(local.url).deals.login(invited, { invite: code })).apiKey).toMatch(/^[0-9a-f-]{36}$/)
    // Spent: a second wallet with the same code is refused; the first signs in again without it.
    await expect(clientsOf(local.url).deals.login(newWalletKey(), { invite: code })).rejects.toThrow(/invitation is not valid/)
    expect((await clientsOf(local.url).deals.login(invited)).apiKey).toMatch(/^[0-9a-f-]{36}$/)
    const expired = local.invite(-1)
    await expect(clientsOf(local.url).deals.login(newWalletKey(), { invite: expired })).rejects.toThrow(/invitation is not valid/)
  })

  it('`cidsync local-service` reads the bounds from its config and says them; `invite` makes a code `login --invite` uses', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    const serviceDir = join(dir, 'service')
    await writeFile(config, `state_dir = "state"\n[service]\ndir = "${serviceDir}"\n[local_service]\nsignup = "invite"\nmax_bytes_per_account = "1MiB"\nmax_bytes_total = "3MiB"\n`)
    const child = spawn(process.execPath, [CLI, 'local-service', '--config', config, '--no-admin'], { stdio: ['ignore', 'pipe', 'pipe'] })
    onTestFinished(() => { child.kill('SIGKILL') })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL: ${stderr}`)), bound(20_000))
      child.stdout.once('data', (d: Buffer) => { clearTimeout(timer); resolve(d.toString().trim()) })
    })
    await until(() => stderr.includes('all accounts together') ? true : undefined, 5_000, 'the sign-up line')
    expect(stderr).toContain('sign-up invite (a new wallet needs a code from `cidsync local-service invite`')
    expect(stderr).toContain('per account: 1048576 bytes, 100 IPNS keys; all accounts together: 3145728 bytes')

    const made = await runCli(['local-service', 'invite', '--dir', serviceDir])
    expect(made.code, made.stderr).toBe(0)
    const code = made.stdout.trim()
    expect(code).toMatch(/^[A-Za-z0-9_-]{24}$/)
    await expect(clientsOf(url).deals.login(newWalletKey())).rejects.toThrow(/cidsync login --invite CODE/)
    expect((await clientsOf(url).deals.login(newWalletKey(), { invite: code })).apiKey).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('`cidsync local-service` warns when open sign-up has a per-account quota and no total', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    await writeFile(config, `state_dir = "state"\n[service]\ndir = "${join(dir, 'service')}"\n[local_service]\nmax_bytes_per_account = "8MiB"\n`)
    const child = spawn(process.execPath, [CLI, 'local-service', '--config', config, '--no-admin'], { stdio: ['ignore', 'pipe', 'pipe'] })
    onTestFinished(() => { child.kill('SIGKILL') })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    await until(() => stderr.includes('max_bytes_total is 0') ? true : undefined, 20_000, `the warning: ${stderr}`)
    expect(stderr).toContain('at most 10 new accounts an hour')
  })
})
