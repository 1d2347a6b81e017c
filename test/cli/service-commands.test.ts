import { describe, it, expect } from 'vitest'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdir, rm, stat, symlink, writeFile, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CLI, runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound, until } from '../helpers/wait.js'
import { formatWalletKey, newWalletKey, walletAddress } from '../../src/crypto/index.js'

const EMPTY_CID = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'

/** `cidsync local-service` as a process; answers its URL and a stop function. */
async function localServiceProcess (dir: string): Promise<{ url: string, stderr: () => string, stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [CLI, 'local-service', '--dir', dir, '--deal-delay-ms', '100'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error('no URL from cidsync local-service')) }, bound(15_000))
    child.stdout.once('data', (d: Buffer) => { clearTimeout(timer); resolve(d.toString().trim()) })
    child.once('exit', code => { clearTimeout(timer); reject(new Error(`local-service exited ${code}`)) })
  })
  return {
    url,
    stderr: () => stderr,
    stop: async () => {
      child.removeAllListeners('exit')
      const exited = new Promise(resolve => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
    }
  }
}

// Each runs the built CLI a dozen times, each starting the embedded service: more on a loaded machine.
describe('service commands on the embedded default', { timeout: 90_000 }, () => {
  it('create, publish, list and remove names; put and get the pointer; ask for a deal', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n')
    const c = ['--config', config]
    const created = JSON.parse((await runCli(['names', 'create', ...c, '--json'])).stdout) as { ipnsName: string, ipnsId: string }
    expect(created.ipnsId).toMatch(/^k51/)
    expect((await runCli(['names', 'publish', created.ipnsName, EMPTY_CID, ...c])).stdout).toBe(`${created.ipnsId} -> /ipfs/${EMPTY_CID}\n`)
    // The id where the name belongs: said so, with the name to use.
    const byId = await runCli(['names', 'publish', created.ipnsId, EMPTY_CID, ...c])
    expect(byId.code).toBe(3)
    expect(byId.stderr).toContain(`${created.ipnsId} is the id of the IPNS key named ${created.ipnsName}, not its name: give its name, ${created.ipnsName}, instead`)
    expect((await runCli(['names', 'list', ...c])).stdout).toContain(`${created.ipnsName}  ${created.ipnsId}  ${EMPTY_CID}`)
    expect((await runCli(['names', 'remove', created.ipnsName, ...c])).stdout).toBe(`removed ${created.ipnsName}  ${created.ipnsId}\n`)

    const none = await runCli(['pointer', 'get', ...c])
    expect(none.code).toBe(3)
    expect(none.stderr).toContain(`nothing stored for namespace default on network mainnet: asked the embedded service at ${join(dir, 'state', 'service')}, a separate account per service dir`)
    expect((await runCli(['pointer', 'put', EMPTY_CID, '--force', '--memories', '7', ...c])).code).toBe(0)
    expect(JSON.parse((await runCli(['pointer', 'get', ...c, '--json'])).stdout)).toMatchObject({ snapshotCid: EMPTY_CID, engine: 'cidsync-sqlite/2', memories: 7 })
    // An empty name is refused here, before the service is asked (exit 2).
    for (const flag of ['--namespace', '--network']) {
      const empty = await runCli(['pointer', 'get', flag, '', ...c])
      expect([empty.code, empty.stderr]).toEqual([2, expect.stringContaining('expected a name of 1 to 256 characters')])
    }

    expect((await runCli(['deal', 'add', EMPTY_CID, ...c])).stdout).toContain('deal requested')
    // The embedded service makes the deal after 5 s; its start and end show as times, not chain epochs.
    const status = await until(async () => { const out = (await runCli(['deal', 'status', EMPTY_CID, ...c])).stdout; return out.startsWith('DEAL') ? out : undefined }, 60_000, 'the deal')
    const today = new Date().toISOString().slice(0, 10)
    expect(status).toMatch(new RegExp(`Active\\s+${today} \\d\\d:\\d\\dZ\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\dZ\\n$`))
    expect(await runCli(['deal', 'add', 'nonsense', ...c])).toMatchObject({ code: 2, stderr: expect.stringContaining('nonsense is not a valid CID') })
    expect((await runCli(['files', ...c, '--json'])).stdout).toBe('')
    expect((await stat(join(dir, 'state', 'service', 'embedded-account.json'))).mode & 0o777).toBe(0o600)
  })
})

describe('service commands against a remote service', { timeout: 90_000 }, () => {
  it('log in with a wallet key, save the key 0600, and use it; refuse a bad token', async () => {
    const dir = await useTempDir()
    const service = await localServiceProcess(join(dir, 'service'))
    try {
      const config = join(dir, 'etc', 'c.toml')
      await import('node:fs/promises').then(async fs => await fs.mkdir(join(dir, 'etc')))
      await writeFile(config, `state_dir = "../state"\n[service]\nmode = "remote"\ndeal_url = "${service.url}"\napi_url = "${service.url}"\npointer_url = "${service.url}"\nupload_url = "${service.url}"\ngateways = ["${service.url}"]\n`)
      const c = ['--config', config]
      const unauthenticated = await runCli(['names', 'list', ...c])
      expect(unauthenticated.code).toBe(1)
      expect(unauthenticated.stderr).toContain('run `cidsync login`')

      const walletKey = newWalletKey()
      const noKey = await runCli(['login', ...c], { env: { ...process.env, CIDSYNC_WALLET_KEY: '' } })
      expect(noKey.code).toBe(2)
      // A newcomer with a self-hosted service has no wallet yet: told what one is and how to make one.
      expect(noKey.stderr).toContain('64 hex digits')
      expect(noKey.stderr).toContain('openssl rand -hex 32')
      const keyFile = join(dir, 'wallet.key')
      await writeFile(keyFile, formatWalletKey(walletKey), { mode: 0o644 })
      await chmod(keyFile, 0o644)
      const loose = await runCli(['login', ...c, '--wallet-key-file', keyFile], { env: { ...process.env, CIDSYNC_WALLET_KEY: '' } })
      expect(loose.code).toBe(2)
      expect(loose.stderr).toContain(`run \`chmod 600 ${keyFile}\``)
      await chmod(keyFile, 0o600)
      const login = await runCli(['login', ...c, '--wallet-key-file', keyFile], { env: { ...process.env, CIDSYNC_WALLET_KEY: '' } })
      expect(login.stdout).toContain(`signed in as ${walletAddress(walletKey)}; API key saved to ${join(dir, 'etc', 'api-key')}\n`)
      // A self-hosted service gives the session token for the wallet's signature too, and the
      // wallet key is kept to renew it: nothing to carry from the service's machine.
      expect(login.stdout).toContain(`session token saved to ${join(dir, 'etc', 'session-token')} (valid until `)
      expect(login.stdout).toContain(`wallet key kept in ${join(dir, 'etc', 'wallet-key')} (0600)`)
      expect(login.stderr).toBe('')
      for (const name of ['session-token', 'wallet-key']) expect((await stat(join(dir, 'etc', name))).mode & 0o777).toBe(0o600)
      expect((await runCli(['pointer', 'get', ...c], { env: { ...process.env, CIDSYNC_SESSION_TOKEN: '' } })).code).toBe(3)
      // A mirror signed in with the wallet alone: told its session token is still missing.
      await writeFile(config, `\n[[mirrors]]\nname = "nas"\nurl = "${service.url}"\n`, { flag: 'a' })
      const mirrorWallet = newWalletKey()
      const mirrorKeyFile = join(dir, 'mirror-wallet.key')
      await writeFile(mirrorKeyFile, formatWalletKey(mirrorWallet), { mode: 0o600 })
      const mirrorLogin = await runCli(['login', ...c, '--mirror', 'nas', '--wallet-key-file', mirrorKeyFile], { env: { ...process.env, CIDSYNC_WALLET_KEY: '' } })
      expect(mirrorLogin.code, mirrorLogin.stderr).toBe(0)
      expect(mirrorLogin.stderr).toContain(`mirror nas has no session token saved yet, and copying to it needs one: \`cidsync login --mirror nas --session-token-file T\` (self-hosted: \`cidsync local-service token --dir D --user ${walletAddress(mirrorWallet)}\``)
      expect(mirrorLogin.stderr).not.toContain('no API key')
      expect((await stat(join(dir, 'etc', 'api-key'))).mode & 0o777).toBe(0o600)
      expect((await runCli(['names', 'list', ...c])).code).toBe(0)

      const token = (await runCli(['local-service', 'token', '--user', walletAddress(walletKey), '--dir', join(dir, 'service')])).stdout.trim()
      expect((await runCli(['pointer', 'get', ...c], { env: { ...process.env, CIDSYNC_SESSION_TOKEN: token } })).code).toBe(3)
      const refused = await runCli(['pointer', 'get', ...c], { env: { ...process.env, CIDSYNC_SESSION_TOKEN: `${token}x` } })
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain('session token was refused or has expired')
      expect(refused.stderr).toContain('cidsync local-service token --dir D --user U')

      // As the README gave it (no --dir) on this remote-mode config: refused, nothing made in the state dir.
      const guessed = await runCli(['local-service', 'token', '--user', walletAddress(walletKey), ...c])
      expect(guessed).toMatchObject({ code: 2, stdout: '' })
      expect(guessed.stderr).toContain('mode = "remote"')
      expect(guessed.stderr).toContain('pass --dir with the directory it was started with')
      expect(existsSync(join(dir, 'state', 'service'))).toBe(false)
      // A --dir no service ever ran on: refused, not created.
      const elsewhere = await runCli(['local-service', 'token', '--user', 'u', '--dir', join(dir, 'nothing-here')])
      expect(elsewhere.code).toBe(2)
      expect(elsewhere.stderr).toContain(`no local service data in ${join(dir, 'nothing-here')}`)
      expect(existsSync(join(dir, 'nothing-here'))).toBe(false)
      expect(await readFile(join(dir, 'etc', 'api-key'), 'utf8')).toMatch(/^[0-9a-f-]{36}\n$/)

      // The path a user takes: the token redirected into the file the config reads, under umask 022.
      const tokenFile = join(dir, 'etc', 'session-token')
      await rm(tokenFile) // as on a device where login got no token (production's)
      const redirected = await new Promise<{ code: number | null, stderr: string }>(resolve => {
        const child = spawn('/bin/sh', ['-c', 'umask 022; exec "$0" "$1" local-service token --user "$2" --dir "$3" > "$4"', process.execPath, CLI, walletAddress(walletKey), join(dir, 'service'), tokenFile], { stdio: ['ignore', 'ignore', 'pipe'] })
        let stderr = ''
        child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
        child.on('close', code => resolve({ code, stderr }))
      })
      // Refused, nothing written: a reader who opened the file before any chmod would keep reading.
      expect(redirected.code, redirected.stderr).toBe(2)
      expect(redirected.stderr).toContain('Use --out FILE')
      expect(await readFile(tokenFile, 'utf8')).toBe('')
      await rm(tokenFile)
      const made = await runCli(['local-service', 'token', '--user', walletAddress(walletKey), '--dir', join(dir, 'service'), '--out', tokenFile])
      expect(made.code, made.stderr).toBe(0)
      const used = await runCli(['pointer', 'get', ...c], { env: { ...process.env, CIDSYNC_SESSION_TOKEN: '' } })
      expect(used.code, used.stderr).toBe(3)
      // --out writes it 0600 whatever the umask.
      const out = join(dir, 'out-token')
      const written = await runCli(['local-service', 'token', '--user', walletAddress(walletKey), '--dir', join(dir, 'service'), '--out', out])
      expect(written.code, written.stderr).toBe(0)
      expect(written.stdout).toBe('')
      expect(written.stderr).toContain(`wrote the token to ${out} (mode 0600)`)
      expect((await stat(out)).mode & 0o777).toBe(0o600)
      expect((await readFile(out, 'utf8')).trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/)
    } finally {
      await service.stop()
    }
  })
})

describe('cidsync local-service', () => {
  it('serves its admin routes only with the admin token it names, kept 0600 in its directory', async () => {
    const dir = await useTempDir()
    const service = await localServiceProcess(join(dir, 'service'))
    try {
      const tokenPath = join(dir, 'service', 'admin.token')
      await until(() => service.stderr().includes(tokenPath) ? true : undefined, 5_000, 'where the admin token is')
      expect((await stat(tokenPath)).mode & 0o777).toBe(0o600)
      const { request } = await import('undici')
      const mint = async (headers: Record<string, string>): Promise<number> => {
        const answer = await request(`${service.url}/local/token`, { method: 'POST', headers, body: JSON.stringify({ user: 'u' }) })
        await answer.body.dump()
        return answer.statusCode
      }
      expect(await mint({})).toBe(401)
      const token = (await readFile(tokenPath, 'utf8')).trim()
      expect(await mint({ authorization: `Bearer ${token}`, origin: 'http://evil.example' })).toBe(403)
      expect(await mint({ authorization: `Bearer ${token}` })).toBe(200)
    } finally {
      await service.stop()
    }
  })
})

describe('the embedded service directory', () => {
  it('is one account for every device that points at it', async () => {
    const dir = await useTempDir()
    const shared = join(dir, 'nas', 'cidsync-service')
    for (const device of ['laptop', 'desktop']) {
      await writeFile(join(dir, `${device}.toml`), `state_dir = "${device}-state"\n[service]\ndir = "${shared}"\n`)
    }
    expect((await runCli(['pointer', 'put', EMPTY_CID, '--force', '--config', join(dir, 'laptop.toml')])).code).toBe(0)
    const seen = await runCli(['pointer', 'get', '--config', join(dir, 'desktop.toml'), '--json'])
    expect(JSON.parse(seen.stdout)).toMatchObject({ snapshotCid: EMPTY_CID })
  })
})

describe('a fresh embedded service directory', () => {
  it('becomes one account even when two commands start on it at once', async () => {
    const dir = await useTempDir()
    const config = join(dir, 'c.toml')
    await writeFile(config, 'state_dir = "state"\n')
    const [a, b] = await Promise.all([
      runCli(['pointer', 'put', EMPTY_CID, '--force', '--namespace', 'race', '--config', config]),
      runCli(['names', 'list', '--config', config])
    ])
    expect([a.code, b.code]).toEqual([0, 0])
    expect(JSON.parse((await runCli(['pointer', 'get', '--namespace', 'race', '--config', config, '--json'])).stdout)).toMatchObject({ snapshotCid: EMPTY_CID })
  })
})

describe('cidsync key', () => {
  it('exports a key on one device and imports it on another; refuses to replace one without --force', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'a.toml'), 'state_dir = "a"\n')
    await writeFile(join(dir, 'b.toml'), 'state_dir = "b"\n')
    const exported = await runCli(['key', 'export', '--config', join(dir, 'a.toml')])
    expect(exported.stdout).toMatch(/^cidsync-key-1:[A-Za-z0-9_-]{43}\n$/)
    const imported = await runCli(['key', 'import', '--config', join(dir, 'b.toml')], { input: exported.stdout })
    expect(imported.stdout).toMatch(/^imported key [0-9a-f]{16} into /)
    expect((await runCli(['key', 'export', '--config', join(dir, 'b.toml')])).stdout).toBe(exported.stdout)
    await writeFile(join(dir, 'c.toml'), 'state_dir = "c"\n')
    await runCli(['key', 'export', '--config', join(dir, 'c.toml')])
    // A state dir that published or restored (it has sync state): its key sealed or opened snapshots.
    await writeFile(join(dir, 'c', 'sync.sqlite'), '')
    const refused = await runCli(['key', 'import', exported.stdout.trim(), '--config', join(dir, 'c.toml')])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('--force')
  })
})

describe('cidsync service install|uninstall --user without a systemd user manager', () => {
  /** A `systemctl` first on PATH that answers as one does with no user bus (a container, su, a bare ssh). */
  async function withoutUserManager (dir: string): Promise<NodeJS.ProcessEnv> {
    const bin = join(dir, 'bin')
    await mkdir(bin)
    await writeFile(join(bin, 'systemctl'), '#!/bin/sh\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n', { mode: 0o755 })
    return { ...process.env, HOME: join(dir, 'home'), PATH: `${bin}:${process.env.PATH ?? ''}`, XDG_CONFIG_HOME: join(dir, 'home', '.config') }
  }

  it('install is refused with a code and what to do, and leaves no unit file', async () => {
    const dir = await useTempDir()
    const env = await withoutUserManager(dir)
    const config = join(dir, 'c.toml')
    await writeFile(config, `state_dir = "${join(dir, 'state')}"\n`)
    const unit = join(dir, 'home', '.config', 'systemd', 'user', 'cidsync.service')
    const install = await runCli(['service', 'install', '--user', '--config', config], { env })
    expect(install.code).toBe(1)
    expect(install.stderr).toContain('[ERR_SERVICE_MANAGER]')
    expect(install.stderr).toContain('systemctl --user show-environment exited 1: Failed to connect to bus: No medium found')
    expect(install.stderr).toContain('loginctl enable-linger')
    expect(install.stderr).toContain('sudo cidsync service install')
    expect(existsSync(unit)).toBe(false)
  })

  it('uninstall removes the unit file and its enable link, saying nothing ran under it', async () => {
    const dir = await useTempDir()
    const env = await withoutUserManager(dir)
    const units = join(dir, 'home', '.config', 'systemd', 'user')
    await mkdir(join(units, 'default.target.wants'), { recursive: true })
    await writeFile(join(units, 'cidsync.service'), '[Unit]\n')
    await symlink(join(units, 'cidsync.service'), join(units, 'default.target.wants', 'cidsync.service'))
    const uninstall = await runCli(['service', 'uninstall', '--user'], { env })
    expect(uninstall.code).toBe(0)
    expect(uninstall.stdout).toContain(`removed ${join(units, 'cidsync.service')} (no systemd user manager runs for this login`)
    expect(existsSync(join(units, 'cidsync.service'))).toBe(false)
    expect(existsSync(join(units, 'default.target.wants', 'cidsync.service'))).toBe(false)
  })
})
