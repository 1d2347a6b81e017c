import { describe, it, expect } from 'vitest'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ScriptedServer } from '../helpers/scripted-server.js'
import { startLocalService } from '../../src/local-service/index.js'
import { formatWalletKey, newWalletKey, walletAddress } from '../../src/crypto/index.js'

const CID = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'

/** A config for a remote service at `url`, and the environment that carries an API key. */
async function remoteConfig (dir: string, url: string): Promise<{ args: string[], env: NodeJS.ProcessEnv }> {
  await mkdir(join(dir, 'etc'), { recursive: true })
  const file = join(dir, 'etc', 'c.toml')
  await writeFile(file, `state_dir = "../state"\n[service]\nmode = "remote"\ndeal_url = "${url}"\napi_url = "${url}"\npointer_url = "${url}"\nupload_url = "${url}"\ngateways = ["${url}"]\n`)
  return { args: ['--config', file], env: { ...process.env, CIDSYNC_API_KEY: 'test-key', CIDSYNC_SESSION_TOKEN: 'a.b.c' } }
}

const record = (id: string, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ id, cid: CID, fileName: `${id}.bin`, mimeType: 'text/plain', fileSizeInBytes: '5', publicKey: '0xabc', sentForDeal: 'yes', encryption: false, createdAt: 1_700_000_000_000, lastUpdate: 1_700_000_000_000, ...extra })

describe('bad input and missing things, as a user sees them', () => {
  it('exits 2 naming a text that is not a CID', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'c.toml'), 'state_dir = "state"\n')
    const c = ['--config', join(dir, 'c.toml')]
    for (const args of [['deal', 'add', 'notacid'], ['deal', 'status', 'notacid'], ['pointer', 'put', 'notacid'], ['names', 'publish', 'f'.repeat(32), 'notacid']]) {
      const run = await runCli([...args, ...c])
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr).toContain('notacid is not a valid')
    }
    expect((await runCli(['pointer', 'put', CID, '--memories', 'lots', ...c])).code).toBe(2)
  })

  it('exits 3 for a key the account does not have', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'c.toml'), 'state_dir = "state"\n')
    const c = ['--config', join(dir, 'c.toml')]
    const missing = 'e'.repeat(32)
    for (const args of [['names', 'publish', missing, CID], ['names', 'remove', missing]]) {
      const run = await runCli([...args, ...c])
      expect(run.code, args.join(' ')).toBe(3)
      expect(run.stderr).toContain(`the account has no IPNS key named ${missing}`)
    }
  })

  it('exits 2 with what the service said when it refuses the input with a 400', async () => {
    const dir = await useTempDir()
    const server = await new ScriptedServer().listen()
    server.answer({ status: 400, body: { error: 'namespace must be at most 64 characters' } })
    const { args, env } = await remoteConfig(dir, server.url)
    const run = await runCli(['pointer', 'put', CID, '--force', '--namespace', 'n'.repeat(100), ...args], { env })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('namespace must be at most 64 characters')
  })
})

describe('listings as production answers them', () => {
  it('lists uploads and names whose optional fields are null', async () => {
    const dir = await useTempDir()
    const server = await new ScriptedServer().listen()
    const { args, env } = await remoteConfig(dir, server.url)
    server.answer({ status: 200, body: { fileList: [record('a', { fileName: null, mimeType: null, sentForDeal: null, createdAt: null, lastUpdate: null, publicKey: null, status: null, txHash: null }), record('b')], totalFiles: 2 } })
    const files = await runCli(['files', ...args], { env })
    expect(files.code).toBe(0)
    expect(files.stdout.split('\n').filter(l => l.includes(CID))).toHaveLength(2)
    server.answer({ status: 200, body: [{ ipnsName: 'a'.repeat(32), ipnsId: 'k51abc', publicKey: '0xabc', cid: null, lastUpdate: null }] })
    const names = await runCli(['names', 'list', ...args], { env })
    expect(names.code).toBe(0)
    expect(names.stdout).toContain(`${'a'.repeat(32)}  k51abc`)
  })

  it('fails, saying how many of totalFiles it read, when the service ignores the cursor', async () => {
    const dir = await useTempDir()
    const server = await new ScriptedServer().listen()
    const { args, env } = await remoteConfig(dir, server.url)
    server.answer({ status: 200, body: { fileList: [record('c'), record('b'), record('a')], totalFiles: 2500 } })
    const run = await runCli(['files', ...args], { env })
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('the listing stopped after 3 of 2500 files')
    const json = await runCli(['files', '--json', ...args], { env })
    expect(json.code).toBe(1)
  })
})

describe('cidsync login', () => {
  it('rides out a 503 and a 429 from the deal service', async () => {
    const dir = await useTempDir()
    const service = await startLocalService({ dir: join(dir, 'service') })
    try {
      service.faults.set('create_api_key', { errorRate: 1, status: 503, times: 1 })
      service.faults.set('get_auth_message', { errorRate: 1, status: 429, retryAfterSeconds: 0, times: 1 })
      const { args, env } = await remoteConfig(dir, service.url)
      const walletKey = newWalletKey()
      const login = await runCli(['login', ...args], { env: { ...env, CIDSYNC_API_KEY: '', CIDSYNC_SESSION_TOKEN: '', CIDSYNC_WALLET_KEY: formatWalletKey(walletKey) } })
      expect(login.stderr).toBe('')
      expect(login.stdout).toContain(`signed in as ${walletAddress(walletKey)}`)
      expect(service.requestLog().filter(r => r.route === 'create_api_key').map(r => r.status)).toEqual([503, 200])
    } finally {
      await service.stop()
    }
  })

  it('against a service that issues no session token for a signature (production: a 404), keeps no wallet key and says where a token comes from', async () => {
    const dir = await useTempDir()
    const service = await startLocalService({ dir: join(dir, 'service') })
    try {
      service.faults.set('create_session_token', { errorRate: 1, status: 404 })
      const { args, env } = await remoteConfig(dir, service.url)
      const walletKey = newWalletKey()
      const login = await runCli(['login', ...args], { env: { ...env, CIDSYNC_API_KEY: '', CIDSYNC_SESSION_TOKEN: '', CIDSYNC_WALLET_KEY: formatWalletKey(walletKey) } })
      expect(login.code, login.stderr).toBe(0)
      expect(login.stdout).toBe(`signed in as ${walletAddress(walletKey)}; API key saved to ${join(dir, 'etc', 'api-key')}\n`)
      expect(login.stderr).toContain('the pointer service also needs a session token, and none is set')
      expect(existsSync(join(dir, 'etc', 'wallet-key'))).toBe(false)
      expect(existsSync(join(dir, 'etc', 'session-token'))).toBe(false)
    } finally {
      await service.stop()
    }
  })
})
