import { describe, expect, it, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { cidProfile } from '../../src/content/index.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { startLocalService, type AccountPolicy, type LocalService } from '../../src/local-service/index.js'
import { createServiceClients, type ServiceClients } from '../../src/remote/index.js'
import { CLI } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound } from '../helpers/wait.js'
import { storedBlockCount } from '../helpers/service-blocks.js'
import { until } from '../helpers/wait.js'

const clientsOf = (url: string): ServiceClients => {
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => undefined, sessionToken: () => undefined }, { retry: { attempts: 1 } })
  onTestFinished(async () => { await clients.close() })
  return clients
}

/** A wallet signed in: clients that send its API key. */
async function account (url: string): Promise<{ clients: ServiceClients, address: string }> {
  const { address, apiKey } = await clientsOf(url).deals.login(newWalletKey())
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => apiKey, sessionToken: () => undefined }, { retry: { attempts: 1 } })
  onTestFinished(async () => { await clients.close() })
  return { clients, address }
}

async function service (dir: string, policy: Partial<AccountPolicy>): Promise<LocalService> {
  const local = await startLocalService({ dir, policy: { signup: 'open', allow: [], maxBytesPerAccount: 0, maxIpnsKeysPerAccount: 0, ...policy } })
  onTestFinished(async () => { await local.stop() })
  return local
}

const blockCount = (dir: string): number => storedBlockCount(dir)

describe('the self-hosted service\'s sign-up policy and quotas', () => {
  it('closed and allowlist sign-ups refuse other wallets; an account already made keeps signing in', async () => {
    const dir = await useTempDir()
    const open = await service(join(dir, 's'), {})
    const owner = newWalletKey()
    await clientsOf(open.url).deals.login(owner)
    await open.stop()

    const closed = await service(join(dir, 's'), { signup: 'closed' })
    await expect(clientsOf(closed.url).deals.login(newWalletKey())).rejects.toThrow(/sign-up is closed/)
    const { request } = await import('undici')
    const message = await request(`${closed.url}/api/v1/user/get_auth_message?publicKey=0x${'ab'.repeat(20)}`)
    expect(message.statusCode).toBe(403)
    await message.body.dump()
    expect((await clientsOf(closed.url).deals.login(owner)).apiKey).toMatch(/^[0-9a-f-]{36}$/)
    await closed.stop()

    const listed = newWalletKey()
    const { walletAddress } = await import('../../src/crypto/index.js')
    const allowlist = await service(join(dir, 's'), { signup: 'allowlist', allow: [walletAddress(listed).toUpperCase().replace('0X', '0x')] })
    await expect(clientsOf(allowlist.url).deals.login(newWalletKey())).rejects.toThrow(/may not sign up here/)
    expect((await clientsOf(allowlist.url).deals.login(listed)).apiKey).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('caps IPNS keys and upload bytes per account; an upload past the quota is refused and leaves no blocks', async () => {
    const dir = await useTempDir()
    const local = await service(join(dir, 's'), { maxIpnsKeysPerAccount: 2, maxBytesPerAccount: 1_000_000 })
    const a = await account(local.url)
    await a.clients.names.create()
    await a.clients.names.create()
    await expect(a.clients.names.create()).rejects.toThrow(/2 IPNS keys, the most this service allows/)
    // Another account has its own allowance.
    const b = await account(local.url)
    await b.clients.names.create()

    const small = join(dir, 'small.bin')
    await writeFile(small, Buffer.alloc(600_000, 1))
    await a.clients.objects.put(small, cidProfile('kubo-cidv1'))
    const blocks = blockCount(join(dir, 's'))
    const big = join(dir, 'big.bin')
    await writeFile(big, Buffer.alloc(600_000, 2))
    await expect(a.clients.objects.put(big, cidProfile('kubo-cidv1'))).rejects.toThrow(/413|max_bytes_per_account/)
    expect(blockCount(join(dir, 's'))).toBe(blocks)
    // b is under its own quota.
    await b.clients.objects.put(big, cidProfile('kubo-cidv1'))
  })

  it('`cidsync local-service` reads [local_service] from the config and says its sign-up policy', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    await writeFile(config, `state_dir = "state"\n[service]\ndir = "${join(dir, 'service')}"\n[local_service]\nsignup = "closed"\nmax_ipns_keys_per_account = 5\n`)
    const child = spawn(process.execPath, [CLI, 'local-service', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] })
    onTestFinished(() => { child.kill('SIGKILL') })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL: ${stderr}`)), bound(20_000))
      child.stdout.once('data', (d: Buffer) => { clearTimeout(timer); resolve(d.toString().trim()) })
    })
    await expect(clientsOf(url).deals.login(newWalletKey())).rejects.toThrow(/sign-up is closed/)
    expect(stderr).toContain('sign-up closed; per account: no limit of bytes, 5 IPNS keys')
  })
})

describe('sign-up of a service reachable beyond loopback', () => {
  const loopbackUrl = (url: string): string => url.replace('//0.0.0.0:', '//127.0.0.1:')

  it('is closed unless the policy opens it; on loopback it stays open', async () => {
    const dir = await useTempDir()
    const wide = await startLocalService({ dir: join(dir, 'wide'), host: '0.0.0.0' })
    onTestFinished(async () => { await wide.stop() })
    expect(wide.signup).toBe('closed')
    await expect(clientsOf(loopbackUrl(wide.url)).deals.login(newWalletKey())).rejects.toThrow(/sign-up is closed/)
    const opened = await startLocalService({ dir: join(dir, 'opened'), host: '0.0.0.0', policy: { signup: 'open', allow: [], maxBytesPerAccount: 0, maxIpnsKeysPerAccount: 0 } })
    onTestFinished(async () => { await opened.stop() })
    expect((await clientsOf(loopbackUrl(opened.url)).deals.login(newWalletKey())).apiKey).toMatch(/^[0-9a-f-]{36}$/)
    const local = await startLocalService({ dir: join(dir, 'local') })
    onTestFinished(async () => { await local.stop() })
    expect(local.signup).toBe('open')
  })

  it('`cidsync local-service --listen 0.0.0.0:0` refuses sign-up and says how to open it; --signup open opens it', async () => {
    const dir = await useTempDir()
    const start = async (name: string, args: string[]): Promise<{ url: string, stderr: () => string }> => {
      const child = spawn(process.execPath, [CLI, 'local-service', '--dir', join(dir, name), '--listen', '0.0.0.0:0', '--no-admin', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
      onTestFinished(() => { child.kill('SIGKILL') })
      let stderr = ''
      child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no URL: ${stderr}`)), 20_000)
        child.stdout.once('data', (d: Buffer) => { clearTimeout(timer); resolve(loopbackUrl(d.toString().trim())) })
      })
      await until(() => stderr.includes('sign-up') ? true : undefined, 5_000, 'the sign-up line')
      return { url, stderr: () => stderr }
    }
    const closed = await start('closed', [])
    expect(closed.stderr()).toContain('sign-up closed (the default beyond loopback')
    // The way in, spelled out: what to write, where, and how a user learns their wallet's address.
    expect(closed.stderr()).toContain('signup = "allowlist" with allow = ["0x..."] under [local_service] in the file --config names')
    // 0.0.0.0 is where it listens, not where others connect.
    expect(closed.stderr()).toMatch(/other machines reach it at http:\/\/<this machine's address>:\d+ \(the \[service\] URLs they set\), not at http:\/\/0\.0\.0\.0:\d+/)
    const empty = await start('empty', ['--signup', 'allowlist'])
    expect(empty.stderr()).toContain('sign-up allowlist (but no wallet is in [local_service] allow: no new account can be made;')
    await expect(clientsOf(closed.url).deals.login(newWalletKey())).rejects.toThrow(/sign-up is closed/)
    const open = await start('open', ['--signup', 'open'])
    expect(open.stderr()).toContain('sign-up open (anyone who reaches it may make an account')
    expect((await clientsOf(open.url).deals.login(newWalletKey())).apiKey).toMatch(/^[0-9a-f-]{36}$/)
  })
})

describe('sign-in messages asked for by a stranger', () => {
  const messageFor = async (url: string, address: string): Promise<{ status: number, retryAfter: string | string[] | undefined }> => {
    const { request } = await import('undici')
    const answer = await request(`${url}/api/v1/user/get_auth_message?publicKey=${address}`)
    await answer.body.dump()
    return { status: answer.statusCode, retryAfter: answer.headers['retry-after'] }
  }

  it('a flood of messages in a wallet\'s name keeps a few, and the wallet still signs in', async () => {
    const dir = await useTempDir()
    const local = await service(join(dir, 's'), {})
    const { walletAddress } = await import('../../src/crypto/index.js')
    const victim = newWalletKey()
    const address = walletAddress(victim)
    for (let i = 0; i < 40; i++) expect((await messageFor(local.url, address)).status).toBe(200)
    const Database = (await import('better-sqlite3')).default
    const open = (): number => {
      const db = new Database(join(dir, 's', 'service.sqlite'), { readonly: true })
      try { return db.prepare('SELECT count(*) FROM auth_messages WHERE address = ?').pluck().get(address.toLowerCase()) as number } finally { db.close() }
    }
    expect(open()).toBe(8)
    expect((await clientsOf(local.url).deals.login(victim)).apiKey).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('past the open messages the service keeps in all, asks wait (429, Retry-After) instead of filling its disk', async () => {
    const dir = await useTempDir()
    const local = await service(join(dir, 's'), {})
    const Database = (await import('better-sqlite3')).default
    const db = new Database(join(dir, 's', 'service.sqlite'))
    try {
      db.pragma('busy_timeout = 5000')
      const insert = db.prepare('INSERT INTO auth_messages (nonce, address, message, expires_at) VALUES (?, ?, ?, ?)')
      const later = Date.now() + 3_600_000
      db.transaction(() => { for (let i = 0; i < 10_000; i++) insert.run(`n${i}`, `0x${String(i).padStart(40, '0')}`, 'm', later) })()
    } finally {
      db.close()
    }
    const answer = await messageFor(local.url, `0x${'cd'.repeat(20)}`)
    expect(answer.status).toBe(429)
    expect(Number(answer.retryAfter)).toBeGreaterThan(0)
  })
})
